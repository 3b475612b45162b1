package main

import "syscall"

// fileLimit is the RLIMIT_NOFILE the suite asks for: the load generator
// holds one descriptor per connection (1,000 and more in the scaling and
// fan-out runs), and every server as many, with room to spare.
const fileLimit = 1 << 16

// raiseFileLimit raises this process's RLIMIT_NOFILE to want, the hard
// limit too where allowed (root), else the soft one to the hard one, and
// returns the soft limit now in force. It always sets the limit through
// package syscall: Go raises the soft limit of its own processes at start
// but gives children the original one back unless the program set it
// itself, and the servers the suite starts need it as much as the suite.
func raiseFileLimit(want uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	n := syscall.Rlimit{Cur: max(l.Cur, want), Max: max(l.Max, want)}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n) == nil {
		return n.Cur, nil
	}
	n = syscall.Rlimit{Cur: max(l.Cur, l.Max), Max: l.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n); err != nil {
		return l.Cur, err
	}
	return n.Cur, nil
}
