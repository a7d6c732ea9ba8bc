package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// confLedger is what the conformance suite knows about one lineage's
// store: what must stay (durable), what was written, acknowledged and
// observed since the last good Open, and the crashes since then.
// Writers and the reader record under mu; everything else runs between
// cycles, with no store goroutine recording.
type confLedger struct {
	mu      sync.Mutex
	durable map[int64]expected // in the log after an earlier good Open: must stay (crashModel.durable)
	recs    map[int64]*confRec // written since the last good Open, by physical offset
	seen    map[qRef][]byte    // what the reader got since the last good Open

	level   Durability     // of the store that wrote recs
	crashes []crashMode    // since the last good Open, in order
	inImage map[int64]bool // recs intact in the image the last crash left

	// ghosts are the messages of appends since the last good Open that
	// returned an error and no result: the crash came while they were
	// written, so each may be in the log or not, wherever the store
	// placed it (see ghost).
	ghosts []*Message

	// For failure messages only: every record the lineage wrote, by
	// offset, with the number of good Opens before it (gen).
	gen  int
	ever map[int64][]genRec
}

// genRec is a record written after gen good Opens.
type genRec struct {
	gen   int
	acked bool
	b     []byte
}

// confRec is one record written since the last good Open.
type confRec struct {
	expected
	acked bool // acknowledged before the crash (see confCycle)
	seen  bool // a reader got it before the crash (set by check)
}

// qRef names one queue offset.
type qRef struct {
	topic string
	qid   int32
	qoff  int64
}

func newConfLedger() *confLedger {
	return &confLedger{durable: map[int64]expected{}, recs: map[int64]*confRec{}, seen: map[qRef][]byte{},
		ever: map[int64][]genRec{}}
}

// written records an append's results; acked says it was acknowledged
// before the crash.
func (l *confLedger) written(msgs []*Message, res []AppendResult, acked bool) {
	es := make([]expected, len(res))
	for j, r := range res {
		es[j] = expectedOf(msgs[j], r)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range es {
		l.recs[e.phys] = &confRec{expected: e, acked: acked}
		l.ever[e.phys] = append(l.ever[e.phys], genRec{gen: l.gen, acked: acked, b: e.bytes})
	}
	if len(res) < len(msgs) {
		l.ghosts = append(l.ghosts, msgs[len(res):]...)
	}
}

// ghost returns the record of a ghost append that b at phys is, encoded
// at the offsets and time b carries: an append that returned no result was
// written by a dying process (confCycle fails one on a live machine), and
// its record may survive like any unacknowledged one.
func (l *confLedger) ghost(phys int64, b []byte) (expected, bool) {
	if len(b) < record.MinSize {
		return expected{}, false
	}
	for _, m := range l.ghosts {
		e := expectedOf(m, AppendResult{PhysicalOffset: phys, QueueOffset: record.QueueOffsetOf(b),
			StoreTimestamp: record.StoreTimestampOf(b), Size: int32(len(b))})
		if bytes.Equal(e.bytes, b) {
			return e, true
		}
	}
	return expected{}, false
}

// explain says what the lineage knows of record b at phys, which the
// checks did not expect there: an earlier generation's record at that
// offset, or the message of an append that returned no result.
func (l *confLedger) explain(phys int64, b []byte) string {
	var out []string
	for _, g := range l.ever[phys] {
		out = append(out, fmt.Sprintf("written there after %d good opens (now %d), acked %v, same bytes %v",
			g.gen, l.gen, g.acked, bytes.Equal(g.b, b)))
	}
	for _, m := range l.ghosts {
		if len(m.Body) > 0 && bytes.Contains(b, m.Body) {
			out = append(out, fmt.Sprintf("holds the body of an append to %s/%d that returned no result, not as it would be stored", m.Topic, m.QueueID))
		}
	}
	for p, gs := range l.ever {
		for _, g := range gs {
			if n := min(64, len(b)); p != phys && len(g.b) == len(b) && bytes.Equal(g.b[len(b)-n:], b[len(b)-n:]) {
				out = append(out, fmt.Sprintf("its last %d bytes match a record written at %d after %d good opens", n, p, g.gen))
			}
		}
	}
	if len(out) == 0 {
		return "the lineage never wrote it anywhere"
	}
	return strings.Join(out, "; ")
}

// observed records what a GetMessages call that returned before the crash
// got from the queue (topic, qid).
func (l *confLedger) observed(topic string, qid int32, res GetResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, b := range res.Records {
		l.seen[qRef{topic, qid, res.QueueOffsets[i]}] = b
	}
}

// crashed notes a crash of the store (or of its Open).
func (l *confLedger) crashed(m crashMode) { l.crashes = append(l.crashes, m) }

// promiseKept says whether every crash since the last good Open is one the
// level survives, so that every acknowledged append must be there.
func (l *confLedger) promiseKept() bool {
	for _, m := range l.crashes {
		if m == processCrash && l.level < DurabilityProcessCrash || m == powerLoss && l.level < DurabilityPowerLoss {
			return false
		}
	}
	return true
}

// seenKept says whether every record a reader got must still be at its
// queue offset: the level puts records in the kernel before indexing
// them, and every crash since was a process crash.
func (l *confLedger) seenKept() bool {
	if l.level < DurabilityProcessCrash {
		return false
	}
	for _, m := range l.crashes {
		if m != processCrash {
			return false
		}
	}
	return true
}

// history names the crashes since the last good Open.
func (l *confLedger) history() string {
	if len(l.crashes) == 0 {
		return "a fresh start"
	}
	var b strings.Builder
	for i, m := range l.crashes {
		if i > 0 {
			b.WriteString(", then ")
		}
		b.WriteString("a " + m.String())
	}
	return b.String()
}

// scanImage notes which written records are intact, at their offsets, in
// the image the last crash left (call it before Open changes the image):
// the ones recovery may remove only into lost+found.
func (l *confLedger) scanImage(mem *vfs.MemFS, opts Options) {
	l.inImage = map[int64]bool{}
	segs := map[int64][]byte{}
	for phys, r := range l.recs {
		base := phys - phys%opts.SegmentSize
		b, ok := segs[base]
		if !ok {
			b, _ = readFile(mem, filepath.Join(opts.Dir, "commitlog", segmentName(base))) // nil if gone
			segs[base] = b
		}
		off := phys - base
		l.inImage[phys] = off+int64(len(r.bytes)) <= int64(len(b)) && bytes.Equal(b[off:off+int64(len(r.bytes))], r.bytes)
	}
}

// reset starts the ledger again after a good Open of s was checked.
func (l *confLedger) reset(s *Store) {
	l.gen++
	l.ghosts = nil
	l.recs = map[int64]*confRec{}
	l.seen = map[qRef][]byte{}
	l.crashes = nil
	l.inImage = nil
	l.level = s.Options().Durability()
}

// lostAndFound returns the contents of every file under dir/lost+found
// and whether that directory exists.
func lostAndFound(fsys vfs.FS, dir string) (exists bool, files [][]byte) {
	root := filepath.Join(dir, "lost+found")
	if _, err := fsys.List(root); err != nil {
		return false, nil
	}
	var walk func(p string)
	walk = func(p string) {
		names, err := fsys.List(p)
		if err != nil { // a file
			if b, err := readFile(fsys, p); err == nil {
				files = append(files, b)
			}
			return
		}
		for _, n := range names {
			walk(filepath.Join(p, n))
		}
	}
	walk(root)
	return true, files
}
