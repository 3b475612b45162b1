//go:build !race

package parse

import (
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// The hot path allocates nothing: frames and requests alias the read
// buffer, and replies are appended into a reused output buffer.

func TestAllocsNextParse(t *testing.T) {
	for _, in := range []string{
		"l\nsome/lock-key\n10 30\n",
		"r\nsome/lock-key\n00000000000000010123456789abcdef\r\n",
		"sl\nsem\n\xc2\xa010\t3 30\n", // the non-ASCII separator path
		"n\nk\n00000000000000010123456789abcdef 30\n",
		"l\nk\n0x10\n", // an error path
		"wl\nrw/key\n10 30\n",
		"incr\ncounter\n -5 \n",
		"kset\nkv\nsome value\t30\n",
		"kcas\nkv\nold\tnew\t\n",
		"lrange\nq\n0 -1\n",
		"bwait\nb\n3 10\n",
		"signal\na.b\npayload\n",
		"listen\na.*\n group \n",
	} {
		buf := []byte(in)
		var req vocab.Request
		allocs := testing.AllocsPerRun(1000, func() {
			f, _, err := Next(buf)
			if err != nil {
				panic(err)
			}
			req, _ = Parse(f)
		})
		if allocs != 0 {
			t.Errorf("Next+Parse(%q): %v allocs per run, want 0", in, allocs)
		}
		_ = req
	}
}

func TestAllocsAppend(t *testing.T) {
	out := make([]byte, 0, 256)
	tok := []byte("00000000000000010123456789abcdef")
	allocs := testing.AllocsPerRun(1000, func() {
		out = AppendGrant(out[:0], vocab.StatusOK, tok, 30, 0, false)
		out = AppendGrant(out, vocab.StatusAcquired, tok, 30, 1<<40, true)
		out = AppendStatus(out, vocab.StatusErrorLeaseExpired)
		out = AppendRenew(out, 30, 7, true)
		out = AppendOKText(out, tok)
	})
	if allocs != 0 {
		t.Errorf("Append*: %v allocs per run, want 0", allocs)
	}
}
