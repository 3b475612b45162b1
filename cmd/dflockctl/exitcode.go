package main

// Exit codes. Where a sysexits.h value fits it is used, so scripts that
// already know those keep working. "lock" exits with its command's own
// status once the command has started; the codes below then only occur
// before that.
const (
	exitOK      = 0
	exitFailure = 1 // I/O error, unexpected server reply, lease-independent failures
	exitUsage   = 2 // bad command line (like flag and most Unix tools)

	exitAbsent      = 3          // kv get, list pop: no value
	exitStatusFree  = exitAbsent // file status: no lock file
	exitStatusStale = 4          // file status: a lock file exists but is stale
	exitDeadlocks   = 5          // deadlocks: some found (and printed); failing to ask is exitFailure
	exitRefused     = 6          // acl check: the policy refuses the identity the command on the key

	exitUnavailable = 69 // EX_UNAVAILABLE: cannot connect to the server
	exitBusy        = 75 // EX_TEMPFAIL: lock held by someone else, a wait timed out, a kv cas conflict
	exitNoPerm      = 77 // EX_NOPERM: file release of a lock that is not ours; server auth rejected; HTTP API: 403 forbidden

	exitCannotRun = 126 // lock: CMD found but could not be started (shell convention)
	exitNotFound  = 127 // lock: CMD not found (shell convention)
	exitSignal    = 128 // + signal number: CMD or dflockctl itself was killed by a signal
)
