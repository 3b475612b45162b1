// Package procstat reads a process's CPU time and resident memory from
// Linux's /proc, to measure a server from the outside: CPU time before and
// after a measured window gives CPU µs per operation, VmHWM the peak RSS.
//
// Only Linux is supported (the files are Linux's); the functions are safe
// for concurrent use and keep no state.
package procstat
