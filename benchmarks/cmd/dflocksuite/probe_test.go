package main

import "testing"

// A --target is any dflockd release, v1.10.0 included, which predates
// ping and answers it "error": the suite must accept it by its stats (the
// hot-key row compares against it).
func TestTargetProbeAcceptsDflockdWithoutPing(t *testing.T) {
	old := newFakeMember(t, func(cmd, _, _ string) string {
		if cmd == "stats" {
			return `ok {"connections":1}`
		}
		return "error"
	})
	if err := probeTarget(old.addr); err != nil {
		t.Fatalf("probe of a server that answers stats: %v", err)
	}
	if err := probeLine(old.addr); err == nil {
		t.Fatal("ping probe accepted an \"error\" answer")
	}
}

// A server that answers neither ping nor stats is refused.
func TestTargetProbeWantsPingOrStats(t *testing.T) {
	if err := probeTarget(wrongServer(t, "error\n")); err == nil {
		t.Fatal("a server answering error to ping and stats was accepted")
	}
}
