package ceiling

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// srv is shared by the package's tests: stopping a gnet engine takes ~0.5 s.
var srv *Server

func TestMain(m *testing.M) {
	var err error
	srv, err = Start("127.0.0.1:0", 2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func TestNextFrame(t *testing.T) {
	in := "l\nk\n10 30\nsl\r\nsem\r\n0 4\r\n"
	cmd, key, arg, n, err := nextFrame([]byte(in))
	if err != nil || string(cmd) != "l" || string(key) != "k" || string(arg) != "10 30" || n != 10 {
		t.Fatalf("first frame: %q %q %q n=%d err=%v", cmd, key, arg, n, err)
	}
	cmd, key, arg, m, err := nextFrame([]byte(in[n:]))
	if err != nil || string(cmd) != "sl" || string(key) != "sem" || string(arg) != "0 4" || m != len(in)-n {
		t.Fatalf("second frame: %q %q %q n=%d err=%v", cmd, key, arg, m, err)
	}
	for cut := 0; cut < 10; cut++ {
		if _, _, _, n, err := nextFrame([]byte(in[:cut])); n != 0 || err != nil {
			t.Errorf("cut %d: n=%d err=%v, want incomplete", cut, n, err)
		}
	}
	if _, _, _, _, err := nextFrame([]byte(strings.Repeat("x", maxLine+1))); err == nil {
		t.Error("unterminated long line accepted")
	}
	if _, _, _, _, err := nextFrame([]byte("l\n" + strings.Repeat("k", maxLine) + "\n1\n")); err == nil {
		t.Error("long key line accepted")
	}
}

func TestReplies(t *testing.T) {
	cases := []struct{ cmd, arg, want string }{
		{"l", "10", "ok 0123456789abcdef0123456789abcdef 33"},
		{"l", "10 30", "ok 0123456789abcdef0123456789abcdef 30"},
		{"sl", "10 4", "ok 0123456789abcdef0123456789abcdef 33"},
		{"sl", "10  4 7", "ok 0123456789abcdef0123456789abcdef 7"},
		{"r", "tok", "ok"},
		{"sr", "tok", "ok"},
		{"ping", "_", "ok"},
		{"stats", "_", "error"},
	}
	for _, tc := range cases {
		got := string(appendReply(nil, []byte(tc.cmd), []byte(tc.arg)))
		if got != tc.want+"\n" {
			t.Errorf("%s %q → %q, want %q", tc.cmd, tc.arg, got, tc.want)
		}
	}
}

func dial(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // generous: a bound on a server that never answers
	return c, bufio.NewReader(c)
}

func expect(t *testing.T, br *bufio.Reader, want ...string) {
	t.Helper()
	for _, w := range want {
		line, err := br.ReadString('\n')
		if err != nil || line != w+"\n" {
			t.Fatalf("got %q (%v), want %q", line, err, w)
		}
	}
}

func TestServerPipelined(t *testing.T) {
	c, br := dial(t)
	var req strings.Builder
	var want []string
	for i := 0; i < 100; i++ {
		req.WriteString("l\nk" + fmt.Sprint(i) + "\n10 30\nr\nk\ntok\n")
		want = append(want, "ok 0123456789abcdef0123456789abcdef 30", "ok")
	}
	if _, err := io.WriteString(c, req.String()); err != nil {
		t.Fatal(err)
	}
	expect(t, br, want...)
}

// Requests split at every byte must be reassembled across OnTraffic calls.
func TestServerByteAtATime(t *testing.T) {
	c, br := dial(t)
	for _, b := range []byte("ping\n_\n_\nsl\nsem\n5 3 9\nbogus\n_\n_\n") {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, br, "ok", "ok 0123456789abcdef0123456789abcdef 9", "error")
}

func TestServerClosesOnLongLine(t *testing.T) {
	c, br := dial(t)
	if _, err := io.WriteString(c, strings.Repeat("x", 300)+"\n_\n_\n"); err != nil {
		t.Fatal(err)
	}
	expect(t, br, "error")
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("connection still open after a long line: %v", err)
	}
}

func TestStartReportsBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if s, err := Start(ln.Addr().String(), 1); err == nil {
		s.Close()
		t.Fatal("Start on a busy port succeeded")
	}
}
