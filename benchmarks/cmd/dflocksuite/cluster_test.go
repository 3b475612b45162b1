package main

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
)

func TestParseWriteReply(t *testing.T) {
	for _, c := range []struct {
		line string
		want writeReply
	}{
		{"ok 18ead9782e2a03335794c52c99b56b5d 30\n", writeReply{granted: true, token: "18ead9782e2a03335794c52c99b56b5d"}},
		{"ok 18ead9782e2a03335794c52c99b56b5d 30 7\n", writeReply{granted: true, token: "18ead9782e2a03335794c52c99b56b5d"}}, // --compat=rf: a fence
		{"error_not_leader\n", writeReply{}},
		{"error_not_leader 127.0.0.1:6393\n", writeReply{leader: "127.0.0.1:6393"}},
		{"error_not_leader [::1]:6393\r\n", writeReply{leader: "[::1]:6393"}},
	} {
		got, err := parseWriteReply(c.line)
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.line, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "\n", "timeout\n", "ok\n", "ok tok\n", "ok tok 30 7 9\n", "ok  tok 30\n",
		"error_not_leader 127.0.0.1\n", "error_not_leader 127.0.0.1:\n", "error_not_leader a:1 b:2\n", "error_not_leader  a:1\n",
		"error_max_locks\n", "error_not_leaderx\n"} {
		if got, err := parseWriteReply(bad); err == nil {
			t.Errorf("%q accepted as %+v", bad, got)
		}
	}
}

// fakeMember answers every request with answer(cmd, key, arg) and records
// the requests.
type fakeMember struct {
	addr string
	mu   sync.Mutex
	reqs []string
}

func newFakeMember(t *testing.T, answer func(cmd, key, arg string) string) *fakeMember {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakeMember{addr: ln.Addr().String()}
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
					var l [3]string
					for i := range l {
						s, err := r.ReadString('\n')
						if err != nil {
							return
						}
						l[i] = strings.TrimSuffix(s, "\n")
					}
					f.mu.Lock()
					f.reqs = append(f.reqs, strings.Join(l[:], " "))
					f.mu.Unlock()
					if _, err := c.Write([]byte(answer(l[0], l[1], l[2]) + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return f
}

func (f *fakeMember) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

// findLeader asks every member, follows no redirect, takes the one that
// grants, releases what it was granted, and skips a member it is told to.
func TestFindLeader(t *testing.T) {
	var leader *fakeMember
	follower := func(cmd, key, arg string) string { return "error_not_leader " + leader.addr }
	leader = newFakeMember(t, func(cmd, key, arg string) string {
		if cmd == "r" {
			return "ok"
		}
		return "ok tok-" + key + " 33"
	})
	f1, f2 := newFakeMember(t, follower), newFakeMember(t, func(string, string, string) string { return "error_not_leader" })
	ms := []*member{{id: "n1", addr: f1.addr, p: &proc{}}, {id: "n2", addr: f2.addr, p: &proc{}}, {id: "n3", addr: leader.addr, p: &proc{}}}
	got, err := findLeader(context.Background(), ms, nil)
	if err != nil || got != ms[2] {
		t.Fatalf("findLeader = %v, %v; want n3", got, err)
	}
	reqs := leader.requests()
	if len(reqs) != 2 || !strings.HasPrefix(reqs[0], "l suite.probe.") || !strings.HasSuffix(reqs[0], " 0") {
		t.Fatalf("leader saw %q, want a try-lock then its release", reqs)
	}
	key := strings.Fields(reqs[0])[1]
	if reqs[1] != "r "+key+" tok-"+key {
		t.Fatalf("release %q, want r %s tok-%s", reqs[1], key, key)
	}
	if len(f1.requests()) != 1 || len(f2.requests()) != 1 {
		t.Fatalf("followers asked %d and %d times, want once each", len(f1.requests()), len(f2.requests()))
	}

	// With the leader dead and none elected, the search ends with ctx.
	ms[2].p.done = true // killed
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := findLeader(ctx, ms, nil); err == nil {
		t.Fatal("a leader found among followers")
	}
	ms[2].p.done = false
	if got, err := findLeader(context.Background(), ms, ms[0]); err != nil || got != ms[2] {
		t.Fatalf("findLeader skipping n1 = %v, %v", got, err)
	}
	if len(f1.requests()) != 2 {
		t.Fatalf("skipped n1 asked again: %q", f1.requests())
	}
}
