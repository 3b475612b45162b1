package parse

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// whitespaceSamples covers ASCII blanks, every Unicode white-space class Go
// knows, look-alikes that are not white space, and invalid UTF-8.
var whitespaceSamples = []string{
	"", " ", "a", "a b", "  a  b  ", "\ta\tb\t", "a\vb\fc\rd\ne",
	"0\xc2\xa07", "\xc2\xa0", "x\xc2\x85y", "\u1680a\u2000b\u200ac\u2028d\u2029e\u202ff\u205fg\u3000",
	"a\u200bb", "a\ufeffb", "a\x1cb\x1dc\x1ed\x1ff", "a\x85b", "a\xa0b", "\xc2", "a\xc2", "\xc2 a",
	"\xff\xfe \xfd", "\xe3\x80", "a\xe3\x80\x80", "\xe3\x80\x80\xe3\x80", "1 2 3 4 5 6 7",
	"tok\xc2\xa0", "\xc2\xa0\xc2\xa0tok x\xc2\xa0\xc2\xa0", "\x00 \x00",
}

func TestFieldsMatchesStringsFields(t *testing.T) {
	for _, s := range whitespaceSamples {
		if err := checkFields([]byte(s)); err != "" {
			t.Error(err)
		}
	}
}

// checkFields compares fields with strings.Fields; "" means they agree.
func checkFields(arg []byte) string {
	var out [maxFields][]byte
	n := fields(arg, &out)
	want := strings.Fields(string(arg))
	if n != len(want) {
		return "fields(" + strconv.Quote(string(arg)) + ") count " + strconv.Itoa(n) + ", strings.Fields " + strconv.Itoa(len(want))
	}
	for i := range min(n, maxFields) {
		if string(out[i]) != want[i] {
			return "fields(" + strconv.Quote(string(arg)) + ")[" + strconv.Itoa(i) + "] = " + strconv.Quote(string(out[i])) + ", want " + strconv.Quote(want[i])
		}
	}
	return ""
}

func TestTrimSpaceMatchesBytes(t *testing.T) {
	for _, s := range whitespaceSamples {
		if got, want := trimSpace([]byte(s)), bytes.TrimSpace([]byte(s)); !bytes.Equal(got, want) {
			t.Errorf("trimSpace(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestAtoiMatchesParseInt(t *testing.T) {
	for _, s := range []string{
		"", "0", "-0", "+0", "7", "+7", "-7", "007", "+", "-", "++1", "+-1", "1+", "1-", " 1", "1 ",
		"1.5", "1e3", "0x10", "0b1", "0o7", "1_000", "\u0663", "\uff11",
		"9223372036", "9223372037", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
		"922337203685477580", "9223372036854775799", "9223372036854775810", "-9223372036854775810",
		"99999999999999999999", "00000000000000000000000000009", "-00000000000000000000009223372036854775808",
	} {
		want, err := strconv.ParseInt(s, 10, 64)
		got, okk := atoi([]byte(s))
		if okk != (err == nil) || okk && got != want {
			t.Errorf("atoi(%q) = %d, %v; ParseInt = %d, %v", s, got, okk, want, err)
		}
	}
}
