package fence

// TokenLen is the length of a V2F token: 16 hex digits of fence followed
// by 16 hex digits of salt (spec §C.1).
const TokenLen = 32

// Token is a dflockd V2F lock token. Its text form is
// hex(Fence as 8 bytes big-endian) ‖ hex(Salt as 8 bytes big-endian), all
// lowercase, so tokens of one key sort in grant order.
type Token struct {
	Fence uint64
	Salt  uint64
}

const hexDigits = "0123456789abcdef"

// Append appends the 32-character text form of t to dst. It does not
// allocate when dst has room for TokenLen more bytes.
func (t Token) Append(dst []byte) []byte {
	n := len(dst)
	if cap(dst)-n < TokenLen {
		dst = append(dst, make([]byte, TokenLen)...)
	} else {
		dst = dst[:n+TokenLen]
	}
	b := dst[n : n+TokenLen]
	putHex16(b[:16], t.Fence)
	putHex16(b[16:], t.Salt)
	return dst
}

// putHex16 writes v as 16 lowercase hex digits, most significant first.
func putHex16(b []byte, v uint64) {
	_ = b[15]
	for i := 15; i >= 0; i-- {
		b[i] = hexDigits[v&0xf]
		v >>= 4
	}
}

// unhex maps a lowercase hex digit to its value and every other byte to
// 0xff. Uppercase is rejected: dflockd only ever emits lowercase, and two
// spellings of one token would break byte-wise token comparison.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(hexDigits) {
		t[hexDigits[i]] = byte(i)
	}
	return t
}()

// ParseToken parses exactly TokenLen lowercase hex digits. Anything else
// (wrong length, uppercase, other bytes) reports false. It does not
// allocate and does not retain b.
func ParseToken(b []byte) (Token, bool) {
	if len(b) != TokenLen {
		return Token{}, false
	}
	f, ok1 := parseHex16(b[:16])
	s, ok2 := parseHex16(b[16:])
	if !ok1 || !ok2 {
		return Token{}, false
	}
	return Token{Fence: f, Salt: s}, true
}

func parseHex16(b []byte) (uint64, bool) {
	_ = b[15]
	var v uint64
	var bad byte
	for _, c := range b[:16] {
		d := unhex[c]
		bad |= d // 0xff has the high bit set; valid digits never do
		v = v<<4 | uint64(d&0xf)
	}
	return v, bad&0x80 == 0
}
