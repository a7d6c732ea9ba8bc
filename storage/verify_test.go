package storage

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// cleanFixture writes n records over several 4 KiB segments, two queues,
// and closes the store cleanly.
func cleanFixture(t *testing.T, n int) (*vfs.MemFS, Options, []AppendResult) {
	t.Helper()
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	opts.SegmentSize = 4 << 10
	s := mustOpen(t, opts)
	var res []AppendResult
	for i := 0; i < n; i++ {
		r, err := s.Append(context.Background(), testMessage("T", int32(i%2), 150+i))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return mem, opts, res
}

func mustVerify(t *testing.T, opts Options) VerifyReport {
	t.Helper()
	r, err := Verify(VerifyOptions{Dir: opts.Dir, FS: opts.FS})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// problemAt returns the first problem of severity sev at offset off.
func problemAt(r VerifyReport, sev string, off int64) (VerifyProblem, bool) {
	for _, p := range r.Problems {
		if p.Severity == sev && p.Offset == off {
			return p, true
		}
	}
	return VerifyProblem{}, false
}

func TestVerifyClean(t *testing.T) {
	_, opts, res := cleanFixture(t, 40)
	r := mustVerify(t, opts)
	last := res[len(res)-1]
	if r.Corrupt() || r.Notes != 0 || r.Records != 40 || r.Entries != 40 || r.Queues != 2 ||
		r.LogEnd != last.PhysicalOffset+int64(last.Size) || r.Segments < 3 || r.SegmentSize != opts.SegmentSize || r.Abort {
		var b strings.Builder
		r.WriteText(&b)
		t.Fatalf("clean store: %s", b.String())
	}
}

// A flipped byte in an old sealed segment (one recovery never reads) is
// found, named by offset, and the walk goes on past it; the queue entry
// pointing at the record is reported too.
func TestVerifyFindsFlippedByte(t *testing.T) {
	mem, opts, res := cleanFixture(t, 40)
	v := res[3]
	flipByte(t, mem, opts, v.PhysicalOffset+90)
	r := mustVerify(t, opts)
	if !r.Corrupt() || r.Records != 39 {
		t.Fatalf("corruptions %d, records %d: %+v", r.Corruptions, r.Records, r.Problems)
	}
	p, ok := problemAt(r, SevCorrupt, v.PhysicalOffset)
	if !ok || !strings.Contains(p.What, "resume") || p.File != filepath.Join("commitlog", segmentName(0)) {
		t.Fatalf("no problem naming offset %d and where records resume: %+v", v.PhysicalOffset, r.Problems)
	}
	found := false
	for _, p := range r.Problems {
		if strings.Contains(p.File, "consumequeue") && p.Offset == v.PhysicalOffset && strings.Contains(p.What, "no valid record") {
			found = true
		}
	}
	if *verbose {
		var b strings.Builder
		r.WriteText(&b)
		t.Log(b.String())
	}
	if !found {
		t.Fatalf("the queue entry of the damaged record is not reported: %+v", r.Problems)
	}
}

// A queue entry with the wrong size or pointing at another queue's record
// is corruption.
func TestVerifyQueueEntryMismatch(t *testing.T) {
	mem, opts, res := cleanFixture(t, 10)
	// T/0's entry #1 is record 2: point it at record 3 (queue T/1).
	path := filepath.Join(opts.Dir, "consumequeue", "T", "0", strings.Repeat("0", 20))
	f, err := mem.Open(path, vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var e [20]byte
	binary.BigEndian.PutUint64(e[:], uint64(res[3].PhysicalOffset))
	binary.BigEndian.PutUint32(e[8:], uint32(res[3].Size))
	f.WriteAt(e[:12], 20)
	f.Close()
	r := mustVerify(t, opts)
	p, ok := problemAt(r, SevCorrupt, res[3].PhysicalOffset)
	if !ok || !strings.Contains(p.What, "belongs to T/1#1") {
		t.Fatalf("mismatched entry not reported: %+v", r.Problems)
	}
}

// A torn tail after a crash is a note (the next Open cuts it), not
// corruption; a truncated segment after a clean stop is corruption.
func TestVerifyTornTailAndTruncation(t *testing.T) {
	t.Run("torn after crash", func(t *testing.T) {
		mem, opts, res := corruptFixture(t, 21, 20, 64<<10)
		last := res[20]
		flipByte(t, mem, opts, last.PhysicalOffset+int64(last.Size)-5)
		r := mustVerify(t, opts)
		if r.Corrupt() || !r.Abort || r.LogEnd != last.PhysicalOffset {
			t.Fatalf("torn tail: %+v", r)
		}
		if p, ok := problemAt(r, SevNote, last.PhysicalOffset); !ok || !strings.Contains(p.What, "torn tail") {
			t.Fatalf("no torn-tail note: %+v", r.Problems)
		}
	})
	t.Run("truncated after clean stop", func(t *testing.T) {
		mem, opts, res := cleanFixture(t, 5)
		last := res[4]
		patch(t, mem, opts, last.PhysicalOffset, func(f vfs.File, off int64) { f.Truncate(off + 30) })
		r := mustVerify(t, opts)
		if !r.Corrupt() || r.LogEnd != last.PhysicalOffset {
			t.Fatalf("truncated: %+v", r)
		}
		if p, ok := problemAt(r, SevCorrupt, last.PhysicalOffset); !ok || !strings.Contains(p.What, "repair") {
			t.Fatalf("no problem at the cut naming repair: %+v", r.Problems)
		}
	})
}

func TestVerifyRefusesOpenStore(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem, "pwrite", FlushSync)
	s := mustOpen(t, opts)
	defer s.Close()
	if _, err := Verify(VerifyOptions{Dir: opts.Dir, FS: mem}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Verify of an open store: %v", err)
	}
	if _, err := Verify(VerifyOptions{Dir: "/nowhere", FS: mem}); err == nil {
		t.Fatal("Verify of no store succeeded")
	}
}

// A log that ends below what its group acknowledged (a power loss took
// an unsynced tail the group had acknowledged) is reported; one that
// reaches it is clean.
func TestVerifyLogShorterThanAcknowledged(t *testing.T) {
	_, opts, res := cleanFixture(t, 20)
	last := res[len(res)-1]
	end := last.PhysicalOffset + int64(last.Size)
	r, err := Verify(VerifyOptions{Dir: opts.Dir, FS: opts.FS, Acked: end, AckedFrom: "test"})
	if err != nil || r.Corrupt() || r.Acked != end {
		t.Fatalf("log at the acknowledged end: %v %+v", err, r)
	}
	r, err = Verify(VerifyOptions{Dir: opts.Dir, FS: opts.FS, Acked: end + 500, AckedFrom: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := problemAt(r, SevCorrupt, end)
	if !ok || !r.Corrupt() || !strings.Contains(p.What, "500 bytes short") {
		t.Fatalf("short log not reported: %+v", r.Problems)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "acked:") {
		t.Fatalf("report: %v\n%s", err, b.String())
	}
}
