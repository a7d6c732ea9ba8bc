package chaos

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/record"
)

func TestRecordMagic(t *testing.T) {
	m := record.MagicMessage
	if recordMagic != uint32(m) {
		t.Fatalf("recordMagic %#x, record.MagicMessage %#x", recordMagic, uint32(m))
	}
}

// TestLoseTail: the cut takes the newest written segment's tail, never
// below the checkpoint's durable offset, and the stages go.
func TestLoseTail(t *testing.T) {
	dir := t.TempDir()
	cl := filepath.Join(dir, "commitlog")
	if err := os.MkdirAll(filepath.Join(dir, "stage"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cl, 0o755); err != nil {
		t.Fatal(err)
	}
	const base = 16 << 20
	seg := make([]byte, 4<<20) // preallocated: zeros past the written 3 MiB
	for i := range 3 << 20 {
		seg[i] = 1
	}
	if err := os.WriteFile(filepath.Join(cl, "00000000000016777216"), seg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cl, "00000000000033554432"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err) // the next segment, nothing written yet
	}
	ck := make([]byte, 48)
	copy(ck, "SAMSACP1")
	binary.BigEndian.PutUint64(ck[20:], base+(3<<20)-100_000) // durable: all but the last 100,000 bytes
	if err := os.WriteFile(filepath.Join(dir, "checkpoint"), ck, 0o644); err != nil {
		t.Fatal(err)
	}
	cut, err := loseTail(dir, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(cl, "00000000000016777216"))
	if cut <= 0 || cut > 100_000 || st.Size() != 3<<20-cut {
		t.Fatalf("cut %d bytes, file now %d bytes; want a cut in (0, 100000] from 3 MiB", cut, st.Size())
	}
	if _, err := os.Stat(filepath.Join(dir, "stage")); !os.IsNotExist(err) {
		t.Fatalf("the stages are still there: %v", err)
	}
}
