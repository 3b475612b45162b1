package main

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
)

// oldDflockd answers as dflockd v1.10.0 does: stats with "ok" and its
// figures, any command it does not know (ping among them) with "error".
func oldDflockd(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					var lines [3]string
					for i := range lines {
						if lines[i], err = r.ReadString('\n'); err != nil {
							return
						}
					}
					reply := "error\n"
					if strings.TrimSpace(lines[0]) == "stats" {
						reply = `ok {"connections":1}` + "\n"
					}
					if _, err := io.WriteString(c, reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A --target is any dflockd release, v1.10.0 included, which predates
// ping: the suite must accept it (the hot-key row compares against it).
func TestTargetProbeAcceptsDflockdWithoutPing(t *testing.T) {
	addr := oldDflockd(t)
	if err := probeTarget(addr); err != nil {
		t.Fatalf("probe of a server that answers stats: %v", err)
	}
	if err := probeLine(addr); err == nil {
		t.Fatal("ping probe accepted an \"error\" answer")
	}
}

// A server that answers neither ping nor stats is refused.
func TestTargetProbeWantsPingOrStats(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					for range 3 {
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
					}
					if _, err := io.WriteString(c, "error\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	if err := probeTarget(ln.Addr().String()); err == nil {
		t.Fatal("a server answering error to ping and stats was accepted")
	}
}
