// Package gnetwrite writes to a gnet connection from its event loop the
// way gnet's own Write does, but without telling the Go scheduler about
// the system call when the socket takes everything at once.
//
// An event loop spends much of its time in write(2); on loopback that call
// also runs the receiving socket's side of TCP. Made through gnet's Write
// (syscall.Syscall: entersyscall, exitsyscall), a write that outlasts a
// sysmon tick looks like a blocked system call: with one P, sysmon hands
// it off and then polls every 20 µs, preempting the loop on a one-CPU
// server. The socket is non-blocking, so a raw write(2) cannot block, and
// need not be announced. dflockd-ng's loops and the benchmarks' no-logic
// ceiling both write this way, so that the ratio between them is still the
// cost of the lock logic alone.
package gnetwrite
