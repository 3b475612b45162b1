package fence

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestTokenAppend(t *testing.T) {
	for _, tc := range []struct {
		tok  Token
		want string
	}{
		{Token{}, "00000000000000000000000000000000"},
		{Token{Fence: 1, Salt: 0xff}, "000000000000000100000000000000ff"},
		{Token{Fence: vecSeq2Ceiling, Salt: 0x0123456789abcdef}, "183c787522ab00000123456789abcdef"},
		{Token{Fence: maxFence, Salt: maxFence}, strings.Repeat("f", 32)},
	} {
		got := tc.tok.Append([]byte("ok "))
		if string(got) != "ok "+tc.want {
			t.Errorf("%+v.Append = %q, want %q", tc.tok, got, "ok "+tc.want)
		}
		back, ok := ParseToken(got[3:])
		if !ok || back != tc.tok {
			t.Errorf("ParseToken(%q) = %+v, %v; want %+v", got[3:], back, ok, tc.tok)
		}
	}
}

func TestTokenAppendMatchesFmt(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 0, 64)
	for i := range 100_000 {
		tok := Token{Fence: r.Uint64() >> (i % 64), Salt: r.Uint64() << (i % 61)}
		buf = tok.Append(buf[:0])
		if want := fmt.Sprintf("%016x%016x", tok.Fence, tok.Salt); string(buf) != want {
			t.Fatalf("%+v.Append = %q, want %q", tok, buf, want)
		}
	}
}

// Tokens of one key sort in grant order: the fence is the big-endian prefix.
func TestTokenOrderFollowsFence(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		a := Token{Fence: r.Uint64(), Salt: r.Uint64()}
		b := Token{Fence: r.Uint64(), Salt: r.Uint64()}
		if a.Fence == b.Fence {
			continue
		}
		if (bytes.Compare(a.Append(nil), b.Append(nil)) < 0) != (a.Fence < b.Fence) {
			t.Fatalf("text order of %+v and %+v disagrees with fence order", a, b)
		}
	}
}

func TestParseTokenRejects(t *testing.T) {
	good := "183c787522ab00000123456789abcdef"
	for _, s := range []string{
		"",
		good[:31],
		good + "0",
		strings.ToUpper(good),
		"183c787522AB00000123456789abcdef",
		"183c787522ab00000123456789abcdeF",
		"183c787522ab0000 123456789abcdef",
		"183c787522ab00000123456789abcdeg",
		"x83c787522ab00000123456789abcdef",
		"183c787522ab00000123456789abcde\n",
		"183c787522ab00000123456789abcd\xff\xff",
		"0x3c787522ab00000123456789abcdef",
		"183c787522ab0000-0123456789abcdef",
	} {
		if tok, ok := ParseToken([]byte(s)); ok {
			t.Errorf("ParseToken(%q) = %+v, true; want rejection", s, tok)
		}
	}
	if _, ok := ParseToken([]byte(good)); !ok {
		t.Fatalf("ParseToken(%q) rejected", good)
	}
}

func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"183c787522ab00000123456789abcdef", "00000000000000000000000000000000", "183C787522ab00000123456789abcdef", "abc", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, ok := ParseToken(b)
		lowerHex := len(b) == TokenLen
		for _, c := range b {
			lowerHex = lowerHex && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f')
		}
		if ok != lowerHex {
			t.Fatalf("ParseToken(%q) ok = %v, want %v", b, ok, lowerHex)
		}
		if ok && !bytes.Equal(tok.Append(nil), b) {
			t.Fatalf("ParseToken(%q) = %+v does not round-trip (%q)", b, tok, tok.Append(nil))
		}
	})
}
