package record

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"testing"
)

func TestVerifyErrors(t *testing.T) {
	f := sampleFields()
	good := make([]byte, 512)
	n, _ := Encode(good, &f)
	good = good[:n]
	mut := func(fn func(b []byte)) []byte { b := append([]byte(nil), good...); fn(b); return b }
	blank := make([]byte, n)
	PutBlank(blank, int32(n))
	cases := []struct {
		name string
		b    []byte
		phys int64
		want error
	}{
		{"good", good, f.PhysOffset, nil},
		{"good, no phys", good, NoPhys, nil},
		{"short", good[:MinSize-1], NoPhys, ErrBadSize},
		{"index says less", good[:n-1], NoPhys, ErrBadSize},
		{"size field", mut(func(b []byte) { b[OffTotalSize+3] ^= 1 }), NoPhys, ErrBadSize},
		{"zeros", make([]byte, n), NoPhys, ErrBadMagic},
		{"blank", blank, NoPhys, ErrBlank},
		{"magic", mut(func(b []byte) { b[5] ^= 1 }), NoPhys, ErrBadMagic},
		{"phys", good, f.PhysOffset + 1, ErrPhysOffset},
		{"body", mut(func(b []byte) { b[84+4] ^= 1 }), NoPhys, ErrRecordCRC},
		{"body CRC field", mut(func(b []byte) { b[OffBodyCRC] ^= 1 }), NoPhys, ErrRecordCRC},
		{"crc digit", mut(func(b []byte) { b[n-2] = 'x' }), NoPhys, ErrNoCRC},
		{"crc value", mut(func(b []byte) { b[n-11] ^= 1 }), NoPhys, ErrRecordCRC},
		{"crc too big", mut(func(b []byte) { copy(b[n-11:], "9999999999") }), NoPhys, ErrNoCRC},
		{"body len", mut(func(b []byte) { binary.BigEndian.PutUint32(b[84:], 1<<20) }), NoPhys, ErrRecordCRC},
	}
	for _, c := range cases {
		err := Verify(c.b, c.phys)
		if (c.want == nil && err != nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// TestVerifyCatchesEveryFlip flips each byte of random records in turn:
// Verify refuses every one, as Validate does.
func TestVerifyCatchesEveryFlip(t *testing.T) {
	seed := int64(7)
	rng := rand.New(rand.NewSource(seed))
	buf := make([]byte, 1<<16)
	for i := 0; i < 50; i++ {
		f := randomFields(rng)
		n, err := Encode(buf, &f)
		if err != nil {
			t.Fatal(err)
		}
		rec := buf[:n]
		if err := Verify(rec, f.PhysOffset); err != nil {
			t.Fatalf("seed %d #%d: good record refused: %v", seed, i, err)
		}
		for at := 0; at < n; at++ {
			bit := byte(1) << rng.Intn(8)
			rec[at] ^= bit
			err := Verify(rec, f.PhysOffset)
			rec[at] ^= bit
			if err == nil {
				t.Fatalf("seed %d #%d: flip of bit %#x at byte %d of %d passed", seed, i, bit, at, n)
			}
		}
	}
}

func TestVerifyZeroAllocs(t *testing.T) {
	f := sampleFields()
	buf := make([]byte, 512)
	n, _ := Encode(buf, &f)
	if a := testing.AllocsPerRun(100, func() { Verify(buf[:n], f.PhysOffset) }); a != 0 {
		t.Fatalf("%v allocs per run", a)
	}
}

// BenchmarkVerify compares Verify with Validate on a 1 KiB body.
func BenchmarkVerify(b *testing.B) {
	f := sampleFields()
	f.Body = make([]byte, 1<<10)
	buf := make([]byte, 2<<10)
	n, _ := Encode(buf, &f)
	rec := buf[:n]
	b.Run("fn=Verify", func(b *testing.B) {
		b.SetBytes(int64(n))
		for i := 0; i < b.N; i++ {
			if err := Verify(rec, f.PhysOffset); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fn=Validate", func(b *testing.B) {
		b.SetBytes(int64(n))
		for i := 0; i < b.N; i++ {
			if _, err := Validate(rec, f.PhysOffset); err != nil {
				b.Fatal(err)
			}
		}
	})
}
