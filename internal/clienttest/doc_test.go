// Package clienttest holds the tests of package client that run against
// the real server (a built dflockd binary, internal/testserver). They live
// in the server's module so that the client module, which programs
// import, requires nothing: an importer's build list is the client alone.
package clienttest
