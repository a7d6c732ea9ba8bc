package record

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode: Decode never panics and never reads past the declared size;
// whatever it accepts re-encodes to the same bytes (the codec is a
// bijection on valid records), and Validate agrees with it.
func FuzzDecode(f *testing.F) {
	s := sampleFields()
	buf := make([]byte, 512)
	n, _ := Encode(buf, &s)
	f.Add(append([]byte(nil), buf[:n]...))
	blank := make([]byte, BlankSize)
	PutBlank(blank, 64)
	f.Add(blank)
	f.Add(buf[:n/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		var u Record
		if DecodeUnchecked(b, &u) == nil {
			// Structurally sound: re-encoding seals it properly.
			g := u.Fields()
			out := make([]byte, u.TotalSize+64)
			n, err := Encode(out, &g)
			if err != nil {
				t.Fatalf("re-encode of a structurally valid record: %v", err)
			}
			var again Record
			if err := Decode(out[:n], g.PhysOffset, &again); err != nil {
				t.Fatalf("decode of re-encoded record: %v", err)
			}
		}
		var r Record
		err := Decode(b, NoPhys, &r)
		size, verr := Validate(b, NoPhys)
		if (err == nil) != (verr == nil) {
			t.Fatalf("Decode %v, Validate %v", err, verr)
		}
		if errors.Is(verr, ErrBlank) && size < BlankSize {
			t.Fatalf("blank of %d", size)
		}
		if err != nil {
			return
		}
		if size != int(r.TotalSize) || size > len(b) {
			t.Fatalf("size %d, record %d, buffer %d", size, r.TotalSize, len(b))
		}
		if r.BornHost.Addr().Is4In6() || r.StoreHost.Addr().Is4In6() ||
			bytes.Contains(r.UserProperties(), crcPairStart) {
			return // the encoder normalises these on purpose
		}
		g := r.Fields()
		out := make([]byte, size)
		if _, err := Encode(out, &g); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(out, b[:size]) {
			t.Fatalf("re-encode differs\n got %x\nwant %x", out, b[:size])
		}
	})
}
