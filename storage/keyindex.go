package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/storage/index"
	"github.com/samsamq/samsa/storage/record"
)

// The key index (package index): the dispatcher indexes every record's
// KEYS (space-separated) and UNIQ_KEY under its topic, after the round's
// ConsumeQueue entries, reading the records back from the log from the
// index's End (so recovery, a failed write and an index that was off all
// catch up the same way); the checkpoint flushes it; recovery cuts it to
// the log and indexes the log again from its End; cuts and retention
// follow the log. QueryByKey reads each candidate and keeps it only if the
// key really is one of its keys: a hash collision or an entry left by a
// crash is never served.
//
//	Dir/index/   package index

// PropertyUniqKey is the property holding a message's unique id (the
// client's msgId; RocketMQ's MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX).
const PropertyUniqKey = "UNIQ_KEY"

// MessageIndexOptions configure the key index (RocketMQ's
// messageIndexEnable, maxHashSlotNum, maxIndexNum).
type MessageIndexOptions struct {
	// Disabled turns the key index off (QueryByKey answers
	// ErrIndexDisabled). Default false: on. It costs the dispatcher a read
	// of every record and a few entries a message (about 20 bytes a key).
	Disabled bool
	// MaxHashSlots is the hash slots per index file. Default 5,000,000
	// (20 MB a file, and in memory for the active file).
	MaxHashSlots int
	// MaxEntries is the keys per index file. Default 20,000,000 (400 MB).
	MaxEntries int
}

func (o *MessageIndexOptions) ensureDefaults() {
	if o.MaxHashSlots == 0 {
		o.MaxHashSlots = index.DefaultMaxHashSlots
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = index.DefaultMaxEntries
	}
}

func (o MessageIndexOptions) validate() error {
	if o.MaxHashSlots < 1 || o.MaxHashSlots > 1<<30 {
		return fmt.Errorf("storage: Options.MessageIndex.MaxHashSlots %d out of [1, %d]", o.MaxHashSlots, 1<<30)
	}
	if o.MaxEntries < 1 || o.MaxEntries > index.MaxMaxEntries {
		return fmt.Errorf("storage: Options.MessageIndex.MaxEntries %d out of [1, %d]", o.MaxEntries, index.MaxMaxEntries)
	}
	return nil
}

func (o MessageIndexOptions) String() string {
	return fmt.Sprintf("{Disabled: %t, MaxHashSlots: %d, MaxEntries: %d}", o.Disabled, o.MaxHashSlots, o.MaxEntries)
}

// ErrIndexDisabled is QueryByKey's answer when the key index is off.
var ErrIndexDisabled = errors.New("storage: the message index is disabled (messageIndexEnable=false)")

// keyIndex is the store's handle on the index; the dispatcher owns the
// scratch fields (recovery before it starts, Close after it exits).
type keyIndex struct {
	x      *index.Index
	buf    []byte
	hashes []uint32
	rec    record.Record
	failed bool // the last catch-up failed (logged once until it succeeds)
	// readBack counts the records indexed by reading them back from the
	// log (catch-up, and records whose keys their append did not take).
	readBack atomic.Int64
	// stalled: a putTaken of this round failed; the rest of the round
	// leaves the index to indexKeys (reset there).
	stalled bool
	// run: keyless taken records putTaken has not put yet, [from, end)
	// with the latest store time ts; put as one (putRun) before any other
	// record and at the round's end.
	run struct {
		from, end, ts int64
	}
	// flushFull: a checkpoint's index flush failed for lack of space and
	// said so once.
	flushFull atomic.Bool
}

// openKeyIndex opens the index (recovery, once the log is open up to end),
// cuts it to the log and indexes what it lacks.
func (s *Store) openKeyIndex(end int64) error {
	if s.opts.MessageIndex.Disabled {
		return nil
	}
	x, err := index.Open(index.Options{FS: s.fs, Dir: filepath.Join(s.dir, "index"), MaxHashSlots: s.opts.MessageIndex.MaxHashSlots,
		MaxEntries: s.opts.MessageIndex.MaxEntries, Logger: s.log})
	if err != nil {
		return fmt.Errorf("storage: open the message index: %w", err)
	}
	s.kidx = &keyIndex{x: x}
	if x.End() > end {
		if err := x.TruncateFrom(end); err != nil {
			return fmt.Errorf("storage: cut the message index to the log: %w", err)
		}
	}
	from, t := x.End(), time.Now()
	if err := s.indexKeysTo(end); err != nil {
		// A full disk: open anyway; the dispatcher catches up later.
		s.kidx.failed = true
		s.log.Error("storage: message index behind the log; the dispatcher catches up later", "at", x.End(), "end", end, "err", err)
		return nil
	}
	if from < end {
		s.log.Info("storage: message index caught up with the log", "from", max(from, s.CommitLogMinOffset()), "to", end,
			"took", time.Since(t).Round(time.Millisecond))
	}
	return nil
}

// inlineKeys is the most key hashes a dispatchReq carries; a message with
// more is read back from the log.
const inlineKeys = 4

// takeKeysLocked puts m's key hashes in r (append lock held): the
// dispatcher then indexes r without reading it back from the log
// (putTaken). A rolled-back transaction's record has none, as
// indexRecord has it.
func (s *Store) takeKeysLocked(r *dispatchReq, m *Message) {
	if record.TransactionType(m.SysFlag) == record.TransactionRollback {
		r.nkeys = 0
		return
	}
	s.mu.keys = appendKeyHashes(s.mu.keys[:0], m.Topic, m.Properties)
	if len(s.mu.keys) <= inlineKeys {
		r.nkeys = int8(copy(r.keys[:], s.mu.keys))
	}
}

// putTaken indexes the dispatched record r: from the keys its append
// took, once the index ends right where r starts (what lies before it
// and is no dispatched record, a segment's closing blank, is read from
// the log first); a record whose keys were not taken is read back. A
// failure leaves the index's End where it was: indexKeys, after the
// round, catches up from there and logs it. The dispatcher's.
func (s *Store) putTaken(r *dispatchReq) {
	k := s.kidx
	if k == nil || k.failed || k.stalled {
		return
	}
	end := r.phys + int64(r.size)
	if r.nkeys == 0 && k.run.end > k.run.from && k.run.end == r.phys {
		k.run.end, k.run.ts = end, max(k.run.ts, r.ts) // one more keyless record in the run
		return
	}
	if s.putRun(); k.stalled {
		return
	}
	if r.nkeys == 0 {
		k.run.from, k.run.end, k.run.ts = r.phys, end, r.ts
		return
	}
	if r.nkeys > 0 {
		if ok, err := k.x.PutNext(r.phys, end, r.ts, r.keys[:r.nkeys]); ok || err != nil {
			k.stalled = err != nil
			return
		}
	}
	// The index does not end where r starts, or r's keys were not taken:
	// read from the log what lies before r (a segment's closing blank),
	// then put r's keys or read r itself. Each is a no-op for what the
	// index already has.
	err := s.indexKeysTo(r.phys)
	switch {
	case err != nil:
	case r.nkeys < 0:
		err = s.indexKeysTo(end)
	default:
		_, err = k.x.PutNext(r.phys, end, r.ts, r.keys[:r.nkeys])
	}
	k.stalled = err != nil
}

// putRun puts the run of keyless records putTaken gathered, if any, as
// one entry-less Put (if the index ends where it starts; otherwise
// indexKeys reads them).
func (s *Store) putRun() {
	k := s.kidx
	if k.run.end <= k.run.from {
		return
	}
	from, end, ts := k.run.from, k.run.end, k.run.ts
	k.run.from, k.run.end = 0, 0
	if _, err := k.x.PutNext(from, end, ts, nil); err != nil {
		k.stalled = true
	}
}

// indexKeys is the dispatcher's hook: index the records below upTo. A
// failure (a full disk) is logged once and retried by the next round.
func (s *Store) indexKeys(upTo int64) {
	if s.kidx == nil {
		return
	}
	if !s.kidx.stalled && !s.kidx.failed {
		s.putRun()
	}
	s.kidx.run.from, s.kidx.run.end = 0, 0
	s.kidx.stalled = false
	err := s.indexKeysTo(upTo)
	switch {
	case err != nil && !s.kidx.failed:
		s.kidx.failed = true
		s.log.Error("storage: message index behind; retrying with the next records", "at", s.kidx.x.End(), "err", err)
	case err == nil && s.kidx.failed:
		s.kidx.failed = false
		s.log.Info("storage: message index caught up again", "at", s.kidx.x.End())
	}
}

// indexKeysTo reads the log from the index's End (or the first record
// still stored) up to upTo, a record boundary, and indexes each record.
func (s *Store) indexKeysTo(upTo int64) error {
	k := s.kidx
	pos := max(k.x.End(), s.CommitLogMinOffset())
	for pos < upTo {
		g, b, err := s.readLogWindow(pos, upTo)
		if err != nil {
			return err
		}
		segEnd := min(g.end(s.segSize), upTo)
		if len(b) < record.BlankSize { // the file ends: only a blank's room was left
			if err := k.x.Put(pos, g.end(s.segSize), 0, nil); err != nil {
				return err
			}
			pos = g.end(s.segSize)
			continue
		}
		for len(b) >= record.BlankSize {
			size, magic, err := record.Header(b)
			if err == nil && magic == record.MagicBlank {
				if err := k.x.Put(pos, g.end(s.segSize), 0, nil); err != nil {
					return err
				}
				pos = g.end(s.segSize)
				break
			}
			if err != nil || magic != record.MagicMessage || size < int32(record.MinSize) || int64(size) > segEnd-pos {
				// Not a record the log should hold here: skip the
				// segment's rest (the scrubber and reads report damage).
				s.log.Warn("storage: message index skips the rest of a segment at an unreadable record", "at", pos, "err", err)
				if err := k.x.Put(pos, g.end(s.segSize), 0, nil); err != nil {
					return err
				}
				pos = g.end(s.segSize)
				break
			}
			if int(size) > len(b) {
				if int(size) > cap(k.buf) { // a record larger than the window: read it whole next time
					k.buf = make([]byte, size)
				}
				break
			}
			if err := s.indexRecord(pos, b[:size]); err != nil {
				return err
			}
			k.readBack.Add(1)
			pos += int64(size)
			b = b[size:]
		}
	}
	return nil
}

// readLogWindow reads up to 256 KiB of the log from pos, or the index's
// whole buffer once a larger record grew it (fewer where the segment's
// file or upTo ends first), into the index's buffer.
func (s *Store) readLogWindow(pos, upTo int64) (*segment, []byte, error) {
	k := s.kidx
	s.segs.RLock() // retention cannot close the segment meanwhile
	defer s.segs.RUnlock()
	g := s.segmentAtLocked(pos)
	if g == nil {
		return nil, nil, fmt.Errorf("storage: message index: no segment at %d", pos)
	}
	n := int(min(min(g.end(s.segSize), upTo)-pos, int64(max(256<<10, cap(k.buf)))))
	if cap(k.buf) < n {
		k.buf = make([]byte, n)
	}
	m, err := g.seg.ReadAt(k.buf[:n], pos-g.base)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("storage: read %d bytes at %d of %s: %w", n, pos-g.base, g.path, err)
	}
	return g, k.buf[:m], nil
}

// indexRecord puts one record's keys.
func (s *Store) indexRecord(pos int64, b []byte) error {
	k := s.kidx
	end := pos + int64(len(b))
	if err := record.DecodeUnchecked(b, &k.rec); err != nil || record.TransactionType(k.rec.SysFlag) == record.TransactionRollback {
		return k.x.Put(pos, end, 0, nil)
	}
	k.hashes = appendKeyHashes(k.hashes[:0], string(k.rec.Topic), k.rec.Properties)
	return k.x.Put(pos, end, k.rec.StoreTimestamp, k.hashes)
}

// appendKeyHashes appends the index hash of each key of props (KEYS split
// at spaces, and UNIQ_KEY) in topic.
func appendKeyHashes(dst []uint32, topic string, props []byte) []uint32 {
	record.ForEachProperty(props, func(name, value []byte) bool {
		switch string(name) {
		case record.PropertyKeys:
			eachKey(value, func(key []byte) bool {
				dst = append(dst, index.Hash(topic, key))
				return true
			})
		case PropertyUniqKey:
			dst = append(dst, index.Hash(topic, value))
		}
		return true
	})
	return dst
}

// eachKey calls fn for each non-empty key of a KEYS value (RocketMQ's
// KEY_SEPARATOR, a space), without allocating, until fn returns false.
func eachKey(keys []byte, fn func(key []byte) bool) {
	for len(keys) > 0 {
		i := bytes.IndexByte(keys, ' ')
		if i < 0 {
			i = len(keys)
		}
		if i > 0 && !fn(keys[:i]) {
			return
		}
		keys = keys[min(i+1, len(keys)):]
	}
}

// hasKey says whether key is among the keys of props.
func hasKey(props []byte, key string) bool {
	found := false
	record.ForEachProperty(props, func(name, value []byte) bool {
		switch string(name) {
		case record.PropertyKeys:
			eachKey(value, func(k []byte) bool {
				found = string(k) == key
				return !found
			})
		case PropertyUniqKey:
			found = found || string(value) == key
		}
		return !found
	})
	return found
}

// KeyQueryResult is QueryByKey's answer.
type KeyQueryResult struct {
	// Records are the stored records found, newest first, each checked
	// (CRC, topic, store time, key), as they lie in the log.
	Records [][]byte
	// PhysOffsets are where they start.
	PhysOffsets []int64
	// IndexLastUpdateTimestamp and IndexLastUpdatePhyoffset say how far
	// the index is (RocketMQ's QueryMessageResult).
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64
}

// QueryByKey returns up to maxNum records of topic whose KEYS hold key, or
// whose UNIQ_KEY is key, stored in [begin, end] (ms), newest first.
func (s *Store) QueryByKey(topic, key string, maxNum int, begin, end int64) (KeyQueryResult, error) {
	var res KeyQueryResult
	if s.kidx == nil {
		return res, ErrIndexDisabled
	}
	if err := s.Err(); err != nil {
		return res, err
	}
	res.IndexLastUpdateTimestamp, res.IndexLastUpdatePhyoffset = s.kidx.x.LastUpdate()
	if maxNum <= 0 || key == "" {
		return res, nil
	}
	h := index.Hash(topic, []byte(key))
	seen := make(map[int64]bool)
	limit := maxNum * 2
	for {
		cands, err := s.kidx.x.Lookup(h, begin, end, limit)
		if err != nil {
			return res, err
		}
		res.Records, res.PhysOffsets = res.Records[:0], res.PhysOffsets[:0]
		clear(seen)
		for _, phys := range cands {
			if seen[phys] || len(res.Records) == maxNum {
				continue
			}
			seen[phys] = true
			raw, ok := s.keyRecord(phys, topic, key, begin, end)
			if ok {
				res.Records = append(res.Records, raw)
				res.PhysOffsets = append(res.PhysOffsets, phys)
			}
		}
		if len(res.Records) == maxNum || len(cands) < limit {
			return res, nil
		}
		limit *= 4 // collisions or stale entries took places: look further
	}
}

// keyRecord reads the record at phys and says whether it is one of
// topic's, stored in [begin, end], with key among its keys.
func (s *Store) keyRecord(phys int64, topic, key string, begin, end int64) ([]byte, bool) {
	var head [8]byte
	if err := s.readInto(head[:], phys); err != nil {
		return nil, false
	}
	size, magic, err := record.Header(head[:])
	if err != nil || magic != record.MagicMessage {
		return nil, false
	}
	raw, err := s.ReadAt(phys, size)
	if err != nil {
		return nil, false
	}
	var r record.Record
	if err := record.Decode(raw, phys, &r); err != nil {
		return nil, false
	}
	if string(r.Topic) != topic || r.StoreTimestamp < begin || r.StoreTimestamp > end ||
		record.TransactionType(r.SysFlag) == record.TransactionRollback || !hasKey(r.Properties, key) {
		return nil, false
	}
	return raw, true
}

// flushKeyIndex is the checkpoint's: the index's entries durable, its
// own checkpoint written. A failure is logged; the index stays behind on
// file and recovery indexes the log again from where it is.
func (s *Store) flushKeyIndex() {
	if s.kidx == nil {
		return
	}
	if err := s.kidx.x.Flush(); err != nil {
		s.logOnceFull(&s.kidx.flushFull, "storage: message index flush failed", err)
	} else {
		s.kidx.flushFull.Store(false)
	}
}

// cutKeyIndex drops the index's entries at or past off (a log cut).
func (s *Store) cutKeyIndex(off int64) error {
	if s.kidx == nil {
		return nil
	}
	if err := s.kidx.x.TruncateFrom(off); err != nil {
		return fmt.Errorf("storage: cut the message index at %d: %w", off, err)
	}
	return nil
}

// expireKeyIndex removes index files wholly below the log's first offset.
func (s *Store) expireKeyIndex() error {
	if s.kidx == nil {
		return nil
	}
	_, err := s.kidx.x.DeleteBefore(s.CommitLogMinOffset())
	return err
}

// closeKeyIndex closes the index (clean: its checkpoint says everything).
func (s *Store) closeKeyIndex() error {
	if s.kidx == nil {
		return nil
	}
	return s.kidx.x.Close()
}
