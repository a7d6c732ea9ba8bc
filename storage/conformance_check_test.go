package storage

import (
	"bytes"
	"fmt"
	"sort"
	"testing"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// check runs the suite's checks (see conformance_test.go) on s, just
// opened on mem after the crashes the ledger noted, then the structural
// ones of crashModel.verify, and starts the ledger again. It stops the
// test at the first discrepancy.
func (l *confLedger) check(t *testing.T, s *Store, mem *vfs.MemFS, where string, st *confStats) {
	t.Helper()
	where = fmt.Sprintf("%s, after %s of a store at level %s", where, l.history(), l.level)
	written := map[int64]expected{}
	if len(l.crashes) > 0 {
		log := walkLog(t, s, where)
		l.markSeen(t, where)
		l.checkRecords(t, s, mem, log, where, st)
		l.checkSeen(t, s, where, st)
		for phys, r := range l.recs {
			written[phys] = r.expected
		}
	}
	m := &crashModel{durable: l.durable, written: written, ghost: l.ghost, explain: l.explain}
	m.verify(t, s, where) // adds what s holds to l.durable: Open fsynced it
	l.reset(s)
}

// markSeen marks the records the reader got, which must be ones written.
func (l *confLedger) markSeen(t *testing.T, where string) {
	t.Helper()
	for ref, b := range l.seen {
		phys := record.PhysOffsetOf(b)
		if r := l.recs[phys]; r != nil && bytes.Equal(r.bytes, b) && r.qoff == ref.qoff {
			r.seen = true
			continue
		}
		if e, ok := l.durable[phys]; ok && bytes.Equal(e.bytes, b) && e.qoff == ref.qoff {
			continue
		}
		if e, ok := l.ghost(phys, b); ok && e.qoff == ref.qoff {
			continue
		}
		t.Fatalf("%s: before the crash a reader got %s/%d offset %d, a record (at %d) never written there",
			where, ref.topic, ref.qid, ref.qoff, phys)
	}
}

// checkRecords checks the level's promise, the prefix and lost+found over
// the records written since the last good Open.
func (l *confLedger) checkRecords(t *testing.T, s *Store, mem *vfs.MemFS, log []logRecord, where string, st *confStats) {
	t.Helper()
	byPhys := make(map[int64][]byte, len(log))
	for _, r := range log {
		byPhys[r.phys] = r.b
	}
	recs := make([]*confRec, 0, len(l.recs))
	for _, r := range l.recs {
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].phys < recs[j].phys })
	promise := l.promiseKept()
	var firstGone *confRec
	lf := lazyLostFound{fsys: mem, dir: s.opts.Dir}
	for _, r := range recs {
		if got, ok := byPhys[r.phys]; ok && bytes.Equal(got, r.bytes) {
			if r.acked && promise {
				st.acked++
			}
			continue
		}
		if r.acked && promise {
			t.Fatalf("%s: append acknowledged at level %s lost: %s/%d queue offset %d at %d (%d bytes, %s); the log ends at %d",
				where, l.level, r.topic, r.qid, r.qoff, r.phys, len(r.bytes), l.imageNote(r), s.WrittenOffset())
		}
		if firstGone == nil {
			firstGone = r
		}
		if (r.acked || r.seen) && l.inImage[r.phys] {
			exists, found := lf.has(r.bytes)
			switch {
			case found:
				st.lostFound++
			case exists:
				t.Fatalf("%s: recovery removed the %s record at %d (%s/%d offset %d) that the crash left intact, "+
					"and it is not in lost+found", where, ackedOrSeen(r), r.phys, r.topic, r.qid, r.qoff)
			default:
				if st.silentCuts == 0 {
					t.Logf("%s: recovery removed the %s record at %d (%s/%d offset %d) that the crash left intact; "+
						"no lost+found on this base (counted, not failed)", where, ackedOrSeen(r), r.phys, r.topic, r.qid, r.qoff)
				}
				st.silentCuts++
			}
		}
	}
	if firstGone != nil && len(log) > 0 && log[len(log)-1].phys > firstGone.phys {
		t.Fatalf("%s: the log is not a prefix of what was written: the record at %d (%s/%d offset %d) is gone, the one at %d is there",
			where, firstGone.phys, firstGone.topic, firstGone.qid, firstGone.qoff, log[len(log)-1].phys)
	}
}

// checkSeen checks that every record a reader got is still at its queue
// offset, when the level and the crashes promise it.
func (l *confLedger) checkSeen(t *testing.T, s *Store, where string, st *confStats) {
	t.Helper()
	if !l.seenKept() {
		return
	}
	refs := make([]qRef, 0, len(l.seen))
	for ref := range l.seen {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool {
		return record.PhysOffsetOf(l.seen[refs[i]]) < record.PhysOffsetOf(l.seen[refs[j]])
	})
	for _, ref := range refs {
		b := l.seen[ref]
		res, err := s.GetMessages(ref.topic, ref.qid, ref.qoff, 1, 0, nil)
		if err == nil && res.Status == Found && len(res.Records) == 1 && res.QueueOffsets[0] == ref.qoff && bytes.Equal(res.Records[0], b) {
			st.seen++
			continue
		}
		now := fmt.Sprintf("status %v, max offset %d, err %v", res.Status, res.MaxOffset, err)
		if res.Status == Found {
			now = fmt.Sprintf("another record (at %d) is there", record.PhysOffsetOf(res.Records[0]))
		}
		phys := record.PhysOffsetOf(b)
		note := "not written"
		if r := l.recs[phys]; r != nil {
			note = l.imageNote(r)
		}
		t.Fatalf("%s: a queue offset went backwards: before the crash a reader got %s/%d offset %d (the record at %d, %s); now %s",
			where, ref.topic, ref.qid, ref.qoff, phys, note, now)
	}
}

// imageNote says whether r was in the image the last crash left.
func (l *confLedger) imageNote(r *confRec) string {
	if l.inImage[r.phys] {
		return "intact in the image the crash left"
	}
	return "not in the image the crash left: never handed to the OS, or lost with the power"
}

func ackedOrSeen(r *confRec) string {
	switch {
	case r.acked && r.seen:
		return "acknowledged and observed"
	case r.acked:
		return "acknowledged"
	}
	return "observed"
}

// lazyLostFound reads lost+found once, when first asked.
type lazyLostFound struct {
	fsys   vfs.FS
	dir    string
	read   bool
	exists bool
	files  [][]byte
}

// has says whether lost+found exists and whether a file in it holds b.
func (lf *lazyLostFound) has(b []byte) (exists, found bool) {
	if !lf.read {
		lf.exists, lf.files = lostAndFound(lf.fsys, lf.dir)
		lf.read = true
	}
	for _, f := range lf.files {
		if bytes.Contains(f, b) {
			return true, true
		}
	}
	return lf.exists, false
}
