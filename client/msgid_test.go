package client

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

func TestMessageIDLayout(t *testing.T) {
	now := time.Date(2025, 3, 2, 0, 0, 1, 0, time.UTC) // a day and a second into March
	g := newIDGen(func() time.Time { return now })
	a, b := g.next(), g.next()
	if len(a) != 32 || a == b {
		t.Fatalf("ids %q %q", a, b)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		t.Fatal(err)
	}
	if pid := binary.BigEndian.Uint16(raw[4:]); pid != uint16(os.Getpid()) {
		t.Fatalf("pid field %d", pid)
	}
	if ms := binary.BigEndian.Uint32(raw[10:]); ms != 86401000 {
		t.Fatalf("time field %d, want 86401000", ms)
	}
	rb, _ := hex.DecodeString(b)
	if c := binary.BigEndian.Uint16(rb[14:]); c != 1 {
		t.Fatalf("second id's counter %d", c)
	}
	for _, c := range a {
		if c >= 'a' && c <= 'f' {
			t.Fatalf("lower-case hex in %q", a)
		}
	}
}
