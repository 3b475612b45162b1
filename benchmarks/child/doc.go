// Package child starts server processes for the benchmark on free loopback
// ports and stops them again: servers that announce their address on stdout
// ("listening host:port", as the ceiling and baseline commands do) and a
// throw-away redis-server.
//
// Every child gets SIGKILL when the process that started it dies
// (Pdeathsig), so an interrupted benchmark leaves no server behind. Linux
// only. A Process's Stop is safe to call more than once but not
// concurrently.
package child
