package session

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
)

// authFake is a fake server with a token configured.
const testAuth = "s3cret-token"

func authFake(t *testing.T) *fakeServer {
	return newFakeServer(t, Config{AuthToken: testAuth, ReadTimeout: 3 * time.Second}, engine.Config{})
}

// expectCooldownClose checks that c got want, stays open through most of
// the 100 ms cool-down and is closed once it ends.
func expectCooldownClose(t *testing.T, fs *fakeServer, c *fakeConn, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	fs.runTimers(99 * time.Millisecond)
	if c.closed {
		t.Fatal("closed before the 100 ms cool-down")
	}
	fs.runTimers(2 * time.Millisecond)
	if !c.closed {
		t.Fatal("still open after the cool-down")
	}
}

// A first request too long for an auth line (over 64 KiB) is a failed
// auth: error_auth and the cool-down, not the plain error and immediate
// close of a long line on an authenticated connection.
func TestAuthLineTooLong(t *testing.T) {
	fs := authFake(t)
	c := fs.open()
	got := fs.traffic(c, "auth\n_\n"+strings.Repeat("s", parse.MaxAuthLine+1)+"\n")
	expectCooldownClose(t, fs, c, got, "error_auth\n")
}

// A read timeout before the auth is a failed auth too (spec §B.13).
func TestAuthReadTimeout(t *testing.T) {
	fs := authFake(t)
	c := fs.open()
	fs.traffic(c, "auth\n")
	fs.runTimers(2999 * time.Millisecond)
	if c.closed || len(c.out) != 0 {
		t.Fatalf("answered %q (closed %v) before the read timeout", c.out, c.closed)
	}
	fs.runTimers(time.Millisecond)
	expectCooldownClose(t, fs, c, string(c.out), "error_auth\n")
}

// Failed auths are judged one per cool-down per address, however many
// connections make them at once; other addresses, and a right token from
// an address with no recent failure, are not slowed.
func TestAuthGateSerialisesGuesses(t *testing.T) {
	fs := authFake(t)
	guess := "auth\n_\nwrong\n"
	var guessers []*fakeConn
	for range 5 {
		guessers = append(guessers, fs.open())
	}
	answered := func() (n int) {
		for _, c := range guessers {
			if len(c.out) > 0 {
				n++
			}
		}
		return n
	}
	for _, c := range guessers {
		fs.traffic(c, guess)
	}
	if n := answered(); n != 1 {
		t.Fatalf("%d of 5 parallel guesses answered at once, want 1", n)
	}
	// Another address with the right token is judged at once.
	other := fs.openFrom(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 1})
	if got := fs.traffic(other, "auth\n_\n"+testAuth+"\nping\n_\n_\n"); got != "ok\nok\n" {
		t.Fatalf("other address: %q", got)
	}
	// The right token from the guessers' address waits its turn: the
	// slots already given to the guesses come first.
	late := fs.open()
	if got := fs.traffic(late, "auth\n_\n"+testAuth+"\nping\n_\n_\n"); got != "" {
		t.Fatalf("judged before the queued guesses: %q", got)
	}
	for i := 2; i <= 5; i++ {
		fs.runTimers(99 * time.Millisecond)
		if n := answered(); n != i-1 {
			t.Fatalf("%d answered %d ms after guess %d", n, 99, i-1)
		}
		fs.runTimers(time.Millisecond)
		if n := answered(); n != i {
			t.Fatalf("%d answered at guess %d's slot", n, i)
		}
	}
	for _, c := range guessers {
		if string(c.out) != "error_auth\n" {
			t.Fatalf("guess answered %q", c.out)
		}
	}
	fs.runTimers(100 * time.Millisecond)
	if got := string(late.out); got != "ok\nok\n" {
		t.Fatalf("right token after the guesses: %q, want ok and the pipelined ping", got)
	}
	// Once the slots have passed, the address is judged at once again.
	fs.runTimers(time.Second)
	if got := fs.traffic(fs.open(), "auth\n_\n"+testAuth+"\n"); got != "ok\n" {
		t.Fatalf("right token after the penalty: %q", got)
	}
}
