package clienttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// dial connects to addr and closes the connection when the test ends.
func dial(t *testing.T, addr string) *client.Conn {
	t.Helper()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// eventually polls cond until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testserver.Eventually(t, what, cond)
}

// receive returns the next value from ch, failing the test if none comes
// within a generous bound or ch is closed.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing received", what)
	}
	panic("unreachable")
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
