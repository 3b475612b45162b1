// Package filelock implements the file-based semaphore lock-file protocol
// (version 1.0): the lock is held while a file exists at an agreed path, and
// the file says who holds it:
//
//	pid=<process id>
//	timestamp=<unix seconds at acquisition>
//	tag=<optional description>
//
// Acquire creates the file with O_CREAT|O_EXCL, writes those lines and
// fsyncs. If the file already exists, its holder is judged stale when
// now - timestamp > stale timeout (default 3600 s); a stale file is removed
// and creation retried. Release unlinks the file. Any implementation of the
// protocol (shell scripts, Python, Rust, …) interoperates with this one.
//
// Where the protocol is silent this package chooses the safe side:
//
//   - Reading is lenient (LF or CRLF, empty lines and unknown keys and lines
//     without '=' ignored, later duplicates win, surrounding white space
//     trimmed — the same result as the protocol's Python example).
//   - A file whose timestamp is missing or not an integer — typically one a
//     peer has just created and not written yet — is aged by its
//     modification time instead, so it is never removed as stale while fresh.
//   - Two removers that both judge the same file stale must not both win:
//     the second would unlink the first one's brand-new lock. On Linux every
//     removal (stale removal, cleanup, release) takes a flock(2) on the file
//     it judged and, under that flock, checks that the path still names the
//     same inode before unlinking. flock is only ever held for that check, so
//     it never blocks anyone for long, and peers that know nothing of it are
//     unaffected. A peer that removes by path without that check can still
//     race with us; no unlink-by-path protocol can exclude that.
//   - Ownership on release is by pid: the file's pid must equal the pid the
//     Lock was configured with.
//
// Concurrency: a Lock holds no mutable state; its methods may be called from
// any goroutine. Exclusion between holders comes only from the file system.
//
// The package knows nothing of command lines, exit codes or output formats.
package filelock
