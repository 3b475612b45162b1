package vocab

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// The encoding is a format: logs and snapshots written by earlier
// releases hold it. These bytes are what the log's and the queue's own
// encoders wrote before they shared this code.
func TestRequestBytesAreTheFormat(t *testing.T) {
	r := Request{Op: OpLock, Key: []byte("k"), Value: []byte{}, Timeout: 10, Lease: -1, TTL: 300}
	for _, c := range []struct {
		form StringForm
		want []byte
	}{
		// op | key "k" as len+1 | token nil | value empty | old nil | 10, -1, 0, 0, 0, 300
		{NilAware, []byte{byte(OpLock), 2, 'k', 0, 1, 0, 20, 1, 0, 0, 0, 0xd8, 0x04}},
		// op | key "k" as len | token, value, old: 0 | the same numbers
		{Plain, []byte{byte(OpLock), 1, 'k', 0, 0, 0, 20, 1, 0, 0, 0, 0xd8, 0x04}},
	} {
		got := AppendRequest(nil, &r, c.form)
		if !bytes.Equal(got, c.want) {
			t.Errorf("form %v: % x, want % x", c.form, got, c.want)
		}
		var back Request
		n, err := ReadRequest(append(got, 0xff), &back, c.form)
		if err != nil || n != len(got) {
			t.Fatalf("form %v: read %d bytes, %v", c.form, n, err)
		}
		want := r
		if c.form == Plain {
			want.Value = nil // the plain form has no empty string
		}
		if !reflect.DeepEqual(back, want) {
			t.Errorf("form %v: read %+v, want %+v", c.form, back, want)
		}
	}
}

// A field read is a slice of the input whose capacity ends with it.
func TestReadRequestCapsFields(t *testing.T) {
	b := AppendRequest(nil, &Request{Op: OpKSet, Key: []byte("a"), Value: []byte("v")}, NilAware)
	var r Request
	if _, err := ReadRequest(b, &r, NilAware); err != nil {
		t.Fatal(err)
	}
	if cap(r.Key) != 1 || cap(r.Value) != 1 {
		t.Fatalf("caps %d, %d: an append would overwrite what follows", cap(r.Key), cap(r.Value))
	}
}

// FuzzReadRequest: no input crashes the decoder; what it accepts, in
// either form, encodes back to the bytes it took (the encoding is
// canonical but for longer varints, which must re-read the same), and
// what it refuses is ErrBadRequestBytes.
func FuzzReadRequest(f *testing.F) {
	f.Add(AppendRequest(nil, &Request{Op: OpLock, Key: []byte("k"), Timeout: 10}, NilAware))
	f.Add(AppendRequest(nil, &Request{Op: OpKCAS, Key: []byte("k"), Value: []byte("new"), Old: []byte{}, TTL: 5}, Plain))
	f.Add([]byte{})
	f.Add([]byte{byte(NumOps)})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, form := range []StringForm{NilAware, Plain} {
			var r Request
			n, err := ReadRequest(data, &r, form)
			if err != nil {
				if !errors.Is(err, ErrBadRequestBytes) {
					t.Fatalf("error %v is not ErrBadRequestBytes", err)
				}
				continue
			}
			again := AppendRequest(nil, &r, form)
			var r2 Request
			if m, err := ReadRequest(again, &r2, form); err != nil || m != len(again) || !reflect.DeepEqual(r, r2) {
				t.Fatalf("form %v: %x read as %+v re-encodes to %x, read back as %+v (%v)", form, data[:n], r, again, r2, err)
			}
		}
	})
}
