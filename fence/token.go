package fence

import "encoding/binary"

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
	binary.BigEndian.PutUint64(b[0:], hex8(uint32(t.Fence>>32)))
	binary.BigEndian.PutUint64(b[8:], hex8(uint32(t.Fence)))
	binary.BigEndian.PutUint64(b[16:], hex8(uint32(t.Salt>>32)))
	binary.BigEndian.PutUint64(b[24:], hex8(uint32(t.Salt)))
	return dst
}

// hex8 returns the 8 lowercase hex digits of v packed big-endian into a
// uint64, computed on all digits at once (this runs once per grant).
func hex8(v uint32) uint64 {
	// Spread the nibbles one per byte, most significant nibble in the
	// most significant byte.
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	// A byte is 1 where its nibble is 10–15: adding 6 carries into bit 4.
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	// '0'+n for digits, 'a'+n-10 = '0'+n+39 for letters; no byte carries.
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
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
