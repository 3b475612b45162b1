//go:build linux

package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue #34's reproduction: requests whose body stops arriving, more of
// them than the server has descriptors. Each declares a body of 1000
// bytes and sends one. Refused ones (no token) must be answered 401 and
// closed at once; authenticated ones once --http-body-timeout passes.
// Either way the line protocol must be served again, and the server's
// descriptors come back to what it had before.
func TestStalledBodiesFreeTheirDescriptors(t *testing.T) {
	const limit, requests = 256, 260
	p := startLimitedProc(t, binary(t), limit, "--auth-token", "tok", "--http-body-timeout", "1")
	pid := p.cmd.Process.Pid // sh execs the server: the same process
	base := openFDs(t, pid)
	for _, phase := range []struct {
		name, header string
		status       int
	}{
		{"unauthenticated", "", http.StatusUnauthorized},
		{"authenticated", "Authorization: Bearer tok\r\n", http.StatusBadRequest},
	} {
		conns := make([]net.Conn, 0, requests)
		t.Cleanup(func() {
			for _, c := range conns {
				c.Close()
			}
		})
		for i := 0; i < requests; i++ {
			c, err := net.DialTimeout("tcp", strings.TrimPrefix(p.base, "http://"), 10*time.Second)
			if err != nil {
				t.Fatalf("%s: dial %d: %v", phase.name, i, err)
			}
			conns = append(conns, c)
			req := "POST /v1/locks/k HTTP/1.1\r\nHost: x\r\n" + phase.header + "Content-Length: 1000\r\n\r\n{"
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatalf("%s: write %d: %v", phase.name, i, err)
			}
		}
		peak := openFDs(t, pid)
		// One deadline for all: only a server that holds them runs it out.
		deadline := time.Now().Add(30 * time.Second)
		answered, refused, held := 0, 0, 0
		for i, c := range conns {
			if i%16 == 0 {
				peak = max(peak, openFDs(t, pid))
			}
			_ = c.SetDeadline(deadline)
			switch status, closed := answer(c); {
			case status == phase.status && closed:
				answered++
			case status == 0 && closed: // accepted on the spare descriptor and closed (internal/fdguard)
				refused++
			default:
				held++
				if status != 0 && status != phase.status {
					t.Errorf("%s: answered %d, want %d", phase.name, status, phase.status)
				}
			}
		}
		t.Logf("%s: %d stalled bodies under ulimit -n %d: %d descriptors before, at most %d seen during the flood; %d answered %d and closed, %d refused, %d still held",
			phase.name, requests, limit, base, peak, answered, phase.status, refused, held)
		if held > 0 {
			t.Fatalf("%s: %d of %d connections were neither answered nor closed", phase.name, held, requests)
		}

		// The line protocol is served again: auth, then ping.
		var last string
		served := false
		for end := time.Now().Add(30 * time.Second); !served && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			served, last = authPing(p.addr, "tok")
		}
		if !served {
			t.Fatalf("%s: no line-protocol auth + ping answered after the flood (last: %s)", phase.name, last)
		}
		var now int
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if now = openFDs(t, pid); now <= base {
				break
			}
		}
		t.Logf("%s: line protocol served; %d descriptors open (%d before)", phase.name, now, base)
		if now > base {
			t.Fatalf("%s: %d descriptors open, not back to the %d before the flood", phase.name, now, base)
		}
		// The client side stays open to here, as a client that holds its
		// connections would: only the server may have ended them.
		for _, c := range conns {
			c.Close()
		}
	}
}

// answer reads one HTTP answer from c: its status (0: none) and whether
// the server then closed the connection.
func answer(c net.Conn) (status int, closed bool) {
	rd := bufio.NewReader(c)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		return 0, !errors.Is(err, os.ErrDeadlineExceeded)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = rd.ReadByte()
	return resp.StatusCode, err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// authPing dials the line protocol and sends auth and ping; ok when both
// answer ok, else what went wrong.
func authPing(addr, token string) (ok bool, why string) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false, err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "auth\n_\n"+token+"\nping\n_\n_\n"); err != nil {
		return false, err.Error()
	}
	rd := bufio.NewReader(c)
	for _, what := range []string{"auth", "ping"} {
		l, err := rd.ReadString('\n')
		if err != nil {
			return false, what + ": " + err.Error()
		}
		if l != "ok\n" {
			return false, what + ": " + strconv.Quote(l)
		}
	}
	return true, ""
}

// openFDs counts the descriptors process pid has open.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatalf("descriptors of the server: %v", err)
	}
	return len(ents)
}
