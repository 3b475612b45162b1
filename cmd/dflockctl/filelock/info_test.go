package filelock

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Info
		wantErr bool
	}{
		{"seed example", "pid=12345\ntimestamp=1703520000\ntag=deploy-v1.2.3\n",
			Info{PID: 12345, Timestamp: 1703520000, HasTimestamp: true, Tag: "deploy-v1.2.3"}, false},
		{"CRLF", "pid=1\r\ntimestamp=2\r\ntag=x\r\n", Info{PID: 1, Timestamp: 2, HasTimestamp: true, Tag: "x"}, false},
		{"no final newline", "pid=1\ntimestamp=2", Info{PID: 1, Timestamp: 2, HasTimestamp: true}, false},
		{"no tag", "pid=1\ntimestamp=2\n", Info{PID: 1, Timestamp: 2, HasTimestamp: true}, false},
		{"unknown fields and empty lines", "\nhost=build-7\npid=1\n\n\r\ntimestamp=2\nversion=9\n",
			Info{PID: 1, Timestamp: 2, HasTimestamp: true}, false},
		{"line without =", "garbage\npid=1\ntimestamp=2\n", Info{PID: 1, Timestamp: 2, HasTimestamp: true}, false},
		{"tag containing =", "pid=1\ntimestamp=2\ntag=a=b\n", Info{PID: 1, Timestamp: 2, HasTimestamp: true, Tag: "a=b"}, false},
		{"later duplicate wins", "pid=1\npid=3\ntimestamp=2\n", Info{PID: 3, Timestamp: 2, HasTimestamp: true}, false},
		{"surrounding space trimmed", "  pid=1  \n\ttimestamp=2\t\n", Info{PID: 1, Timestamp: 2, HasTimestamp: true}, false},
		{"any field order", "tag=t\ntimestamp=2\npid=1\n", Info{PID: 1, Timestamp: 2, HasTimestamp: true, Tag: "t"}, false},
		{"empty tag", "pid=1\ntimestamp=2\ntag=\n", Info{PID: 1, Timestamp: 2, HasTimestamp: true}, false},
		{"empty file", "", Info{}, true},
		{"missing pid", "timestamp=2\n", Info{Timestamp: 2, HasTimestamp: true}, true},
		{"missing timestamp", "pid=1\n", Info{PID: 1}, true},
		{"pid zero", "pid=0\ntimestamp=2\n", Info{Timestamp: 2, HasTimestamp: true}, true},
		{"pid negative", "pid=-4\ntimestamp=2\n", Info{Timestamp: 2, HasTimestamp: true}, true},
		{"timestamp not integer", "pid=1\ntimestamp=17.5\n", Info{PID: 1}, true},
		{"space around =", "pid = 1\ntimestamp = 2\n", Info{}, true},
		{"bad duplicate overrides good", "pid=1\ntimestamp=2\ntimestamp=x\n", Info{PID: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if got != tt.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v does not match ErrMalformed", err)
			}
		})
	}
}

func TestAppendInfo(t *testing.T) {
	got := string(AppendInfo([]byte("x"), Info{PID: 42, Timestamp: 1703520000, Tag: "deploy v1"}))
	if want := "xpid=42\ntimestamp=1703520000\ntag=deploy v1\n"; got != want {
		t.Errorf("AppendInfo = %q, want %q", got, want)
	}
	if got, want := string(AppendInfo(nil, Info{PID: 1, Timestamp: 2})), "pid=1\ntimestamp=2\n"; got != want {
		t.Errorf("AppendInfo without tag = %q, want %q", got, want)
	}
}

func TestValidTag(t *testing.T) {
	for _, tag := range []string{"deploy-v1.2.3", "a=b", "with space", "ünïcode ✓"} {
		if err := ValidTag(tag); err != nil {
			t.Errorf("ValidTag(%q) = %v, want nil", tag, err)
		}
	}
	for _, tag := range []string{"two\nlines", "cr\r", "nul\x00", " lead", "trail ", "\xff"} {
		if err := ValidTag(tag); !errors.Is(err, ErrBadTag) {
			t.Errorf("ValidTag(%q) = %v, want ErrBadTag", tag, err)
		}
	}
}

// FuzzParse checks that Parse never panics and that whatever it accepts
// survives an encode/decode round trip.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"pid=12345\ntimestamp=1703520000\ntag=deploy-v1.2.3\n",
		"pid=1\r\ntimestamp=2\r\n",
		"x=y\n\npid=1\ntimestamp=-5\ntag=a=b",
		"pid=99999999999999999999\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if info.PID <= 0 || !info.HasTimestamp {
			t.Fatalf("accepted %+v without pid or timestamp", info)
		}
		if info.Tag != "" && ValidTag(info.Tag) != nil {
			return // readable but not writable as is; nothing to round-trip
		}
		again, err := Parse(AppendInfo(nil, info))
		if err != nil || again != info {
			t.Fatalf("round trip of %+v gave %+v, %v", info, again, err)
		}
	})
}
