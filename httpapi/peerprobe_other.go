//go:build !linux

package httpapi

import "syscall"

// peerProbe is Linux's (peerprobe_linux.go): elsewhere it tells nothing,
// and only the per-address cap and the write timeout bound a stream
// nobody reads.
type peerProbe struct{}

func newPeerProbe(syscall.RawConn) *peerProbe { return nil }

func (p *peerProbe) mark() {}

func (p *peerProbe) stalled() bool { return false }
