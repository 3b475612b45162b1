package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/cmd/dflockctl/client"
	"github.com/dflockd-ng/dflockd/cmd/dflockctl/internal/fakedflockd"
)

func startServer(t *testing.T, o fakedflockd.Options) *fakedflockd.Server {
	t.Helper()
	s, err := fakedflockd.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func dial(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLockRenewRelease(t *testing.T) {
	s := startServer(t, fakedflockd.Options{})
	ctx := context.Background()
	c := dial(t, client.Config{Addr: s.Addr()})
	g, err := c.Lock(ctx, "job", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Token) != 32 || g.Lease != 33 {
		t.Fatalf("grant %+v, want 32-hex token and the default lease 33", g)
	}
	if n, err := c.Renew(ctx, "job", g.Token, 60); err != nil || n != 60 {
		t.Fatalf("Renew = %d, %v; want 60", n, err)
	}
	if _, err := c.Renew(ctx, "job", strings.Repeat("0", 32), 60); !isReply(err, client.StatusError) {
		t.Fatalf("Renew with wrong token = %v, want reply error", err)
	}
	other := dial(t, client.Config{Addr: s.Addr()})
	if _, err := other.Lock(ctx, "job", 0, 5); !errors.Is(err, client.ErrTimeout) {
		t.Fatalf("try-lock of held key = %v, want ErrTimeout", err)
	}
	if err := c.Release(ctx, "job", g.Token); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "job", g.Token); !isReply(err, client.StatusError) {
		t.Fatalf("second Release = %v, want reply error", err)
	}
	g2, err := other.Lock(ctx, "job", 0, 5)
	if err != nil || g2.Lease != 5 {
		t.Fatalf("Lock after release = %+v, %v; want lease 5", g2, err)
	}
	want := []string{"l job 0", "n job " + g.Token + " 60"}
	var got []string
	for _, r := range s.Requests()[:2] {
		got = append(got, r.Cmd+" "+r.Key+" "+r.Arg)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("frames %q, want %q", got, want)
	}
}

func isReply(err error, st client.Status) bool {
	var re *client.ReplyError
	return errors.As(err, &re) && re.Status() == st
}

func TestBlockingLockGrantedOnRelease(t *testing.T) {
	s := startServer(t, fakedflockd.Options{})
	ctx := context.Background()
	a := dial(t, client.Config{Addr: s.Addr()})
	b := dial(t, client.Config{Addr: s.Addr()})
	g, err := a.Lock(ctx, "k", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx, "k", 30, 0)
		got <- err
	}()
	waitFor(t, func() bool { return countCmd(s, "l") == 2 })
	if err := a.Release(ctx, "k", g.Token); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("blocked Lock: %v", err)
	}
}

// TestLeaseExpiresWithoutRenew is a control for the CLI's renewal test: the
// fake really hands the lock on when nobody renews.
func TestLeaseExpiresWithoutRenew(t *testing.T) {
	s := startServer(t, fakedflockd.Options{})
	ctx := context.Background()
	a := dial(t, client.Config{Addr: s.Addr()})
	b := dial(t, client.Config{Addr: s.Addr()})
	g, err := a.Lock(ctx, "k", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "k", 10, 1); err != nil {
		t.Fatalf("waiter not granted after the 1 s lease ran out: %v", err)
	}
	if _, err := a.Renew(ctx, "k", g.Token, 1); !isReply(err, client.StatusError) {
		t.Fatalf("renew of expired lease = %v, want reply error", err)
	}
}

func TestAuth(t *testing.T) {
	s := startServer(t, fakedflockd.Options{AuthToken: "s3cret"})
	ctx := context.Background()
	c := dial(t, client.Config{Addr: s.Addr(), AuthToken: "s3cret"})
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if r := s.Requests()[0]; r.Cmd != "auth" || r.Key != "_" || r.Arg != "s3cret" {
		t.Fatalf("first frame %+v, want auth _ s3cret", r)
	}
	if _, err := client.Dial(ctx, client.Config{Addr: s.Addr(), AuthToken: "wrong"}); !errors.Is(err, client.ErrAuth) {
		t.Fatalf("Dial with wrong token = %v, want ErrAuth", err)
	}
	noAuth := dial(t, client.Config{Addr: s.Addr()})
	if err := noAuth.Ping(ctx); !errors.Is(err, client.ErrAuth) {
		t.Fatalf("ping without auth on a server that requires it = %v, want ErrAuth", err)
	}
	// A server without auth answers auth with "error" and serves anyway.
	open := startServer(t, fakedflockd.Options{})
	c2 := dial(t, client.Config{Addr: open.Addr(), AuthToken: "unneeded"})
	if err := c2.Ping(ctx); err != nil {
		t.Fatalf("ping after unneeded auth: %v", err)
	}
}

func TestStats(t *testing.T) {
	s := startServer(t, fakedflockd.Options{})
	ctx := context.Background()
	c := dial(t, client.Config{Addr: s.Addr()})
	if _, err := c.Lock(ctx, "k", 0, 0); err != nil {
		t.Fatal(err)
	}
	doc, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Connections int
		Locks       []struct{ Key string }
	}
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("stats %q: %v", doc, err)
	}
	if v.Connections != 1 || len(v.Locks) != 1 || v.Locks[0].Key != "k" {
		t.Fatalf("stats %q", doc)
	}
}

// TestConcurrentRequestsDoNotInterleave hammers one Client from several
// goroutines; with frames interleaved the server would see garbage and
// replies would not match (a renew would get a stats reply).
func TestConcurrentRequestsDoNotInterleave(t *testing.T) {
	s := startServer(t, fakedflockd.Options{})
	ctx := context.Background()
	c := dial(t, client.Config{Addr: s.Addr()})
	g, err := c.Lock(ctx, "k", 0, 30)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 50 {
				var err error
				switch i % 3 {
				case 0:
					var n int
					n, err = c.Renew(ctx, "k", g.Token, 30)
					if err == nil && n != 30 {
						t.Errorf("renew reply %d", n)
					}
				case 1:
					err = c.Ping(ctx)
				default:
					var doc string
					doc, err = c.Stats(ctx)
					if err == nil && !strings.HasPrefix(doc, "{") {
						t.Errorf("stats reply %q", doc)
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCancelBlockingLock(t *testing.T) {
	s := startServer(t, fakedflockd.Options{})
	holder := dial(t, client.Config{Addr: s.Addr()})
	if _, err := holder.Lock(context.Background(), "k", 0, 0); err != nil {
		t.Fatal(err)
	}
	c := dial(t, client.Config{Addr: s.Addr()})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(ctx, "k", 60, 0)
		got <- err
	}()
	waitFor(t, func() bool { return countCmd(s, "l") == 2 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, want context.Canceled", err)
	}
	if err := c.Ping(context.Background()); !errors.Is(err, client.ErrBroken) {
		t.Fatalf("request after cancellation = %v, want ErrBroken", err)
	}
}

func TestReplyTimeout(t *testing.T) {
	// A peer that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			defer conn.Close()
			<-t.Context().Done()
		}
	}()
	c := dial(t, client.Config{Addr: ln.Addr().String(), ReplyTimeout: 100 * time.Millisecond})
	var ne net.Error
	if err := c.Ping(context.Background()); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Ping to silent peer = %v, want a timeout", err)
	}
}

func TestRejectsInvalidInput(t *testing.T) {
	s := startServer(t, fakedflockd.Options{})
	c := dial(t, client.Config{Addr: s.Addr()})
	ctx := context.Background()
	for _, key := range []string{"", "a b", "a\nb", strings.Repeat("k", 257)} {
		if _, err := c.Lock(ctx, key, 0, 0); err == nil {
			t.Errorf("Lock(%q) accepted", key)
		}
	}
	if _, err := c.Lock(ctx, "k", -1, 0); err == nil {
		t.Error("negative timeout accepted")
	}
	if err := c.Release(ctx, "k", "a\nb"); err == nil {
		t.Error("token with LF accepted")
	}
	if len(s.Requests()) != 0 {
		t.Fatalf("invalid requests reached the server: %+v", s.Requests())
	}
	if _, err := client.Dial(ctx, client.Config{Addr: s.Addr(), AuthToken: "a\nb"}); err == nil {
		t.Error("auth token with LF accepted")
	}
}

func countCmd(s *fakedflockd.Server, cmd string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Cmd == cmd {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
