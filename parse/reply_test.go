package parse

import (
	"math"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// specVocabulary is the status vocabulary of spec §B.14 (the union over all
// versions); every Status must render as one of these words.
var specVocabulary = []string{
	"ok", "acquired", "queued", "timeout", "error", "error_auth", "error_max_locks", "error_max_waiters",
	"error_limit_mismatch", "error_not_enqueued", "error_already_enqueued", "error_lease_expired",
	"error_draining", "error_not_leader", "error_denied",
	// RF only
	"nil", "cas_conflict", "error_max_keys", "error_list_full", "error_type_mismatch",
	"error_barrier_count_mismatch",
}

func TestStatusWords(t *testing.T) {
	want := []struct {
		s    vocab.Status
		word string
	}{
		{vocab.StatusOK, "ok"},
		{vocab.StatusAcquired, "acquired"},
		{vocab.StatusQueued, "queued"},
		{vocab.StatusTimeout, "timeout"},
		{vocab.StatusError, "error"},
		{vocab.StatusErrorAuth, "error_auth"},
		{vocab.StatusErrorMaxLocks, "error_max_locks"},
		{vocab.StatusErrorMaxWaiters, "error_max_waiters"},
		{vocab.StatusErrorLimitMismatch, "error_limit_mismatch"},
		{vocab.StatusErrorNotEnqueued, "error_not_enqueued"},
		{vocab.StatusErrorAlreadyEnqueued, "error_already_enqueued"},
		{vocab.StatusErrorLeaseExpired, "error_lease_expired"},
		{vocab.StatusErrorDraining, "error_draining"},
		{vocab.StatusNil, "nil"},
		{vocab.StatusCASConflict, "cas_conflict"},
		{vocab.StatusErrorMaxKeys, "error_max_keys"},
		{vocab.StatusErrorListFull, "error_list_full"},
		{vocab.StatusErrorTypeMismatch, "error_type_mismatch"},
		{vocab.StatusErrorBarrierCountMismatch, "error_barrier_count_mismatch"},
		{vocab.StatusErrorNotLeader, "error_not_leader"},
		{vocab.StatusErrorDenied, "error_denied"},
	}
	if len(want) != vocab.NumStatuses {
		t.Fatalf("test covers %d statuses, package defines %d", len(want), vocab.NumStatuses)
	}
	words := map[string]bool{}
	for _, w := range specVocabulary {
		words[w] = true
	}
	seen := map[string]vocab.Status{}
	for i, tc := range want {
		if int(tc.s) != i {
			t.Errorf("%s has value %d, want %d", tc.word, tc.s, i)
		}
		if got := string(AppendStatus(nil, tc.s)); got != tc.word+"\n" {
			t.Errorf("AppendStatus(%d) = %q, want %q", tc.s, got, tc.word+"\n")
		}
		if tc.s.String() != tc.word {
			t.Errorf("Status(%d).String() = %q, want %q", tc.s, tc.s.String(), tc.word)
		}
		if !words[tc.s.String()] {
			t.Errorf("%q is not in the spec's status vocabulary", tc.s.String())
		}
		if prev, dup := seen[tc.s.String()]; dup {
			t.Errorf("%d and %d share the word %q", prev, tc.s, tc.s.String())
		}
		seen[tc.s.String()] = tc.s
	}
	// Replies never carry a CR, a blank or an upper-case letter in the word.
	for s := range vocab.Status(vocab.NumStatuses) {
		if w := s.String(); w == "" || strings.ContainsAny(w, " \r\n\tABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Errorf("bad status word %q", w)
		}
	}
}

func TestAppendStatusKeepsPrefix(t *testing.T) {
	dst := AppendStatus([]byte("ok\n"), vocab.StatusTimeout)
	if got := string(dst); got != "ok\ntimeout\n" {
		t.Fatalf("got %q", got)
	}
}

func TestAppendGrant(t *testing.T) {
	const tok = "00000000000000010123456789abcdef"
	tests := []struct {
		name      string
		s         vocab.Status
		lease     int64
		fence     uint64
		withFence bool
		want      string
	}{
		{"ok", vocab.StatusOK, 30, 0, false, "ok " + tok + " 30\n"},
		{"acquired", vocab.StatusAcquired, 5, 0, false, "acquired " + tok + " 5\n"},
		{"fence ignored without flag", vocab.StatusOK, 30, 42, false, "ok " + tok + " 30\n"},
		{"rf fence", vocab.StatusOK, 30, 42, true, "ok " + tok + " 30 42\n"},
		{"rf fence zero printed", vocab.StatusAcquired, 1, 0, true, "acquired " + tok + " 1 0\n"},
		{"rf fence max", vocab.StatusOK, 33, math.MaxUint64, true, "ok " + tok + " 33 18446744073709551615\n"},
		{"max lease", vocab.StatusOK, vocab.MaxSeconds, 0, false, "ok " + tok + " 9223372036\n"},
	}
	for _, tc := range tests {
		if got := string(AppendGrant(nil, tc.s, []byte(tok), tc.lease, tc.fence, tc.withFence)); got != tc.want {
			t.Errorf("%s: AppendGrant = %q, want %q", tc.name, got, tc.want)
		}
	}
	dst := AppendGrant([]byte("queued\n"), vocab.StatusOK, []byte(tok), 7, 0, false)
	if got := string(dst); got != "queued\nok "+tok+" 7\n" {
		t.Errorf("AppendGrant after a reply = %q", got)
	}
}

func TestAppendRenew(t *testing.T) {
	tests := []struct {
		remaining int64
		fence     uint64
		withFence bool
		want      string
	}{
		{33, 0, false, "ok 33\n"},
		{7, 99, false, "ok 7\n"},
		{7, 99, true, "ok 7 99\n"},
		{1, 0, true, "ok 1 0\n"},
		{0, 0, false, "ok 0\n"},
		{vocab.MaxSeconds, math.MaxUint64, true, "ok 9223372036 18446744073709551615\n"},
	}
	for _, tc := range tests {
		if got := string(AppendRenew(nil, tc.remaining, tc.fence, tc.withFence)); got != tc.want {
			t.Errorf("AppendRenew(%d, %d, %v) = %q, want %q", tc.remaining, tc.fence, tc.withFence, got, tc.want)
		}
	}
	if got := string(AppendRenew([]byte("ok\n"), 5, 0, false)); got != "ok\nok 5\n" {
		t.Errorf("AppendRenew after a reply = %q", got)
	}
}

func TestAppendOKText(t *testing.T) {
	json := `{"connections":1,"locks":[],"semaphores":[],"idle_locks":[],"idle_semaphores":[]}`
	for _, tc := range []struct{ text, want string }{
		{json, "ok " + json + "\n"},
		{"5", "ok 5\n"},
		{"", "ok \n"},
		{strings.Repeat("x", 5000), "ok " + strings.Repeat("x", 5000) + "\n"}, // replies are not capped
	} {
		if got := string(AppendOKText(nil, []byte(tc.text))); got != tc.want {
			t.Errorf("AppendOKText(%.30q) = %.40q, want %.40q", tc.text, got, tc.want)
		}
	}
	if got := string(AppendOKText([]byte("timeout\n"), []byte("x"))); got != "timeout\nok x\n" {
		t.Errorf("AppendOKText after a reply = %q", got)
	}
}
