package engine

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dflockd-ng/dflockd/fence"
)

func TestStatsShowsDurableFence(t *testing.T) {
	a, err := fence.Open(filepath.Join(t.TempDir(), "fence"), fence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := newHarness(t, Config{Fences: a})
	s := h.session()
	tk := wantGrant(t, h.do(s, "l", "k", "0"), 33)
	var doc struct {
		Locks []map[string]any `json:"locks"`
		Fence *struct {
			Last     uint64 `json:"last"`
			Ceiling  uint64 `json:"ceiling"`
			Durable  bool   `json:"durable"`
			Persists uint64 `json:"persists"`
		} `json:"fence"`
	}
	if err := json.Unmarshal(h.eng.AppendStats(nil, 1), &doc); err != nil {
		t.Fatal(err)
	}
	f := doc.Fence
	if f == nil || !f.Durable || f.Ceiling <= f.Last {
		t.Fatalf("fence stats %+v", f)
	}
	if tok, _ := fence.ParseToken([]byte(tk)); tok.Fence != f.Last {
		t.Fatalf("last fence %d, token carries %d", f.Last, tok.Fence)
	}
	if len(doc.Locks) != 1 {
		t.Fatalf("locks %v", doc.Locks)
	}
}
