package parse

import (
	"encoding/json"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

func TestAppendPush(t *testing.T) {
	for _, c := range []struct {
		k    vocab.PushKind
		a, b string
		want string
	}{
		{vocab.PushSignal, "ch.1", "hello world", "sig ch.1 hello world\n"},
		{vocab.PushWatch, "acquire", "k", "watch acquire k\n"},
		{vocab.PushLeader, "elected", "svc", "leader elected svc\n"},
	} {
		got := string(AppendPush([]byte("x"), c.k, c.a, c.b))
		if got != "x"+c.want || PushLen(c.k, c.a, c.b) != len(c.want) {
			t.Errorf("AppendPush(%v, %q, %q) = %q (len %d)", c.k, c.a, c.b, got, PushLen(c.k, c.a, c.b))
		}
	}
}

// jsonList is what encoding/json makes of items, the reference.
func jsonList(t testing.TB, items []string) string {
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return "ok " + string(b) + "\n"
}

func TestAppendOKListMatchesEncodingJSON(t *testing.T) {
	for _, items := range [][]string{
		{},
		{""},
		{"a", "b c", "tab\there"},
		{`quote " backslash \ slash /`, "<a href=\"x\">&amp;</a>", "\x00\x01\x1f\x7f"},
		{"é ü 日本 \U0001F600", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "\xed\xa0\x80 surrogate"},
	} {
		if got, want := string(AppendOKList(nil, items)), jsonList(t, items); got != want {
			t.Errorf("AppendOKList(%q)\n got %q\nwant %q", items, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<>&\"\\", "\u2028", "\xff", "\xe2\x80", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendOKList(nil, []string{s})), jsonList(t, []string{s}); got != want {
			t.Fatalf("%q: got %q want %q", s, got, want)
		}
	})
}
