package clienttest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/policy"
)

// The Go client against a server with a policy: a token that names an
// identity with every permission works as --auth-token did (every
// primitive), and one limited to a prefix gets ErrServer with
// error_denied on the others' keys, on a connection that stays usable.
func TestClientWithPolicyIdentities(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy")
	text := "identity all\n token " + policy.TokenHash("tok-all") + "\n allow * *\n" +
		"identity team-a\n token " + policy.TokenHash("tok-a") + "\n allow * a/*\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testserver.Start(t, "--policy-file", file)
	dialAs := func(tok string) *client.Conn {
		d := client.Dialer{AuthToken: tok}
		c, err := d.Dial(context.Background(), srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := dialAs("tok-all")
	tok, lease, err := client.Acquire(c, "any/lock", time.Second, client.WithLeaseTTL(30))
	must(t, err)
	if len(tok) != 32 || lease != 30 {
		t.Fatalf("Acquire: %q %d", tok, lease)
	}
	_, err = client.Renew(c, "any/lock", tok)
	must(t, err)
	must(t, client.Release(c, "any/lock", tok))
	stok, _, err := client.SemAcquire(c, "any/sem", time.Second, 2)
	must(t, err)
	must(t, client.SemRelease(c, "any/sem", stok))
	if n, err := client.Incr(c, "any/n", 5); err != nil || n != 5 {
		t.Fatalf("Incr: %d %v", n, err)
	}
	must(t, client.KVSet(c, "any/k", "v", 0))
	if v, err := client.KVGet(c, "any/k"); err != nil || v != "v" {
		t.Fatalf("KVGet: %q %v", v, err)
	}
	if n, err := client.RPush(c, "any/l", "x"); err != nil || n != 1 {
		t.Fatalf("RPush: %d %v", n, err)
	}
	if v, err := client.LPop(c, "any/l"); err != nil || v != "x" {
		t.Fatalf("LPop: %q %v", v, err)
	}

	a := dialAs("tok-a")
	_, _, err = client.Acquire(a, "a/job", time.Second)
	must(t, err)
	_, _, err = client.Acquire(a, "b/job", time.Second)
	wantErr(t, err, client.ErrServer, "team-a Acquire b/job")
	if !strings.Contains(err.Error(), "error_denied") {
		t.Fatalf("the refusal's error does not say error_denied: %v", err)
	}
	_, err = client.Incr(a, "b/n", 1)
	wantErr(t, err, client.ErrServer, "team-a Incr b/n")
	if n, err := client.Incr(a, "a/n", 1); err != nil || n != 1 {
		t.Fatalf("team-a Incr a/n after two refusals: %d %v", n, err)
	}

	d := client.Dialer{AuthToken: "tok-nobody"}
	if _, err := d.Dial(context.Background(), srv.Addr()); err == nil {
		t.Fatal("a token no identity has dialled")
	}
}
