// Package policy is who may do what on a server shared by several teams:
// identities (named tokens, stored only as their SHA-256, and client
// certificate names), their permissions by key prefix and class of
// command, and their quotas.
//
// A Policy is parsed from a file (Parse, file.go), is immutable once
// made, and is safe for concurrent use: a server swaps the whole Policy
// on reload, and a connection that holds an *Identity of the old one
// looks its name up again in the new one (Policy.Identity).
//
// The check that matters for speed is Identity.Allows: one walk of a
// byte trie along the key, allocation-free, whatever the number of
// rules (match.go).
//
// policy knows the command vocabulary (package vocab) to class each
// command; it knows nothing of sessions, sockets or the engine.
package policy
