package session

import (
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
)

// One protocol session driven end to end over the fake transport, without
// gnet: auth, a pipelined batch, a blocked l granted later by another
// session's release, and a push, each arriving in wire order.
func TestSessionEndToEndWithoutGnet(t *testing.T) {
	fs := newFakeServer(t, Config{AuthToken: "s3cret"}, engine.Config{})
	a, b := fs.open(), fs.open()

	// a authenticates and pipelines four requests in one read.
	got := fs.traffic(a, request("auth", "_", "s3cret")+
		request("l", "job", "0 10")+
		request("listen", "news.*", "")+
		request("incr", "hits", "2")+
		request("ping", "_", "_"))
	if want := "ok\nok " + tokenFor(1) + " 10\nok\nok 2\nok\n"; got != want {
		t.Fatalf("a's pipelined replies %q, want %q", got, want)
	}

	// b's l on the held key parks: no reply yet.
	if got := fs.traffic(b, request("auth", "_", "s3cret")+request("l", "job", "5 7")); got != "ok\n" {
		t.Fatalf("b before the grant: %q", got)
	}

	// a releases and signals itself; b gets its grant late. a's push was
	// posted to its transport while the read was being served, so it
	// follows the read's replies, which are written at once.
	got = fs.traffic(a, request("r", "job", tokenFor(1))+request("signal", "news.eu", "hello")+request("get", "hits", "_"))
	if want := "ok\nok 1\nok 2\nsig news.eu hello\n"; got != want {
		t.Fatalf("a after release and signal %q, want %q", got, want)
	}
	if got := string(b.out[len("ok\n"):]); got != "ok "+tokenFor(2)+" 7\n" {
		t.Fatalf("b's late grant %q", got)
	}

	// Without auth nothing is served.
	c := fs.open()
	if got := fs.traffic(c, request("l", "job", "0")); got != "error_auth\n" {
		t.Fatalf("unauthenticated: %q", got)
	}
}
