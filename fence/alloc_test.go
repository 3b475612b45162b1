//go:build !race

package fence

import "testing"

func TestHotPathsDoNotAllocate(t *testing.T) {
	va := NewVolatile()
	buf := make([]byte, 0, TokenLen)
	tok := []byte("183c787522ab00000123456789abcdef")
	cases := map[string]func(){
		"volatile Next": func() { va.Next() },
		"Token.Append":  func() { buf = Token{Fence: 1, Salt: 2}.Append(buf[:0]) },
		"ParseToken":    func() { ParseToken(tok) },
	}
	if durableSupported {
		da := mustOpen(t, stateIn(t, nil), Options{})
		cases["durable Next"] = func() { da.Next() }
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(10_000, f); n != 0 {
			t.Errorf("%s: %v allocs per call, want 0", name, n)
		}
	}
}
