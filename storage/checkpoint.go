package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"time"

	"github.com/samsamq/samsa/storage/consumequeue"
)

// The checkpoint file, Dir/checkpoint, says how far the store is known
// durable. It is rewritten whole and atomically (temp file, fsync, rename,
// fsync of the directory). Big-endian:
//
//	off  size  field        why
//	  0     8  MAGIC        "SAMSACP1": format and version
//	  8     4  FLAGS        bit 0: written by a clean Close (with no abort
//	                        marker, Open skips the scan)
//	 12     8  SEGMENTSIZE  the store's segment size, fixed for life
//	 20     8  DURABLE      CommitLog offset known fsynced: recovery treats a bad
//	                        record below it as corruption, never as a torn tail
//	 28     8  DISPATCHED   every record below it has its ConsumeQueue entry
//	                        durable: recovery re-indexes from here (the
//	                        periodic checkpoint syncs the busy queues and
//	                        leaves quiet ones for later, within
//	                        ConsumeQueueFlushMaxDelay, so this lags the
//	                        dispatcher by up to that much)
//	 36     8  TIME         ms, when written
//	 44     4  NQUEUES
//	 48     .  QUEUES       per queue: topic length 1, topic, queue id 4, next
//	                        offset 8 (the queue's offsets below min(DURABLE,
//	                        DISPATCHED)): a cross-check of the recovered queues
//	  .     4  CRC          CRC32 (IEEE) of everything before it
type checkpoint struct {
	clean      bool
	segSize    int64
	durable    int64
	dispatched int64
	timeMs     int64
	queues     map[queueKey]int64
}

const (
	checkpointMagic  = "SAMSACP1"
	checkpointHeader = 48
	flagClean        = 1
)

func (c *checkpoint) encode() []byte {
	keys := make([]queueKey, 0, len(c.queues))
	n := checkpointHeader + 4
	for k := range c.queues {
		keys = append(keys, k)
		n += 1 + len(k.topic) + 4 + 8
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].qid < keys[j].qid
	})
	b := make([]byte, n)
	be := binary.BigEndian
	copy(b, checkpointMagic)
	var flags uint32
	if c.clean {
		flags |= flagClean
	}
	be.PutUint32(b[8:], flags)
	be.PutUint64(b[12:], uint64(c.segSize))
	be.PutUint64(b[20:], uint64(c.durable))
	be.PutUint64(b[28:], uint64(c.dispatched))
	be.PutUint64(b[36:], uint64(c.timeMs))
	be.PutUint32(b[44:], uint32(len(keys)))
	p := checkpointHeader
	for _, k := range keys {
		b[p] = byte(len(k.topic))
		p++
		p += copy(b[p:], k.topic)
		be.PutUint32(b[p:], uint32(k.qid))
		be.PutUint64(b[p+4:], uint64(c.queues[k]))
		p += 12
	}
	be.PutUint32(b[p:], crc32.ChecksumIEEE(b[:p]))
	return b
}

var errBadCheckpoint = errors.New("storage: bad checkpoint")

func decodeCheckpoint(b []byte) (checkpoint, error) {
	var c checkpoint
	be := binary.BigEndian
	if len(b) < checkpointHeader+4 || string(b[:8]) != checkpointMagic {
		return c, fmt.Errorf("%w: %d bytes, no magic", errBadCheckpoint, len(b))
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != be.Uint32(b[len(b)-4:]) {
		return c, fmt.Errorf("%w: CRC mismatch", errBadCheckpoint)
	}
	c.clean = be.Uint32(b[8:])&flagClean != 0
	c.segSize = int64(be.Uint64(b[12:]))
	c.durable = int64(be.Uint64(b[20:]))
	c.dispatched = int64(be.Uint64(b[28:]))
	c.timeMs = int64(be.Uint64(b[36:]))
	n := int(be.Uint32(b[44:]))
	c.queues = make(map[queueKey]int64, n)
	p := checkpointHeader
	for i := 0; i < n; i++ {
		if p >= len(body) {
			return c, fmt.Errorf("%w: queue %d of %d past the end", errBadCheckpoint, i, n)
		}
		tl := int(body[p])
		p++
		if p+tl+12 > len(body) {
			return c, fmt.Errorf("%w: queue %d of %d past the end", errBadCheckpoint, i, n)
		}
		k := queueKey{topic: string(body[p : p+tl]), qid: int32(be.Uint32(body[p+tl:]))}
		c.queues[k] = int64(be.Uint64(body[p+tl+4:]))
		p += tl + 12
	}
	if p != len(body) {
		return c, fmt.Errorf("%w: %d trailing bytes", errBadCheckpoint, len(body)-p)
	}
	return c, nil
}

func (s *Store) checkpointPath() string { return filepath.Join(s.dir, "checkpoint") }

// readCheckpoint returns the checkpoint, or ok false if there is none. A
// damaged one is ErrCorrupt: it is written atomically, so only the medium
// (or a person) can damage it.
func (s *Store) readCheckpoint() (c checkpoint, ok bool, err error) {
	p := s.checkpointPath()
	b, err := readFile(s.fs, p)
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("storage: read %s: %w", p, err)
	}
	c, err = decodeCheckpoint(b)
	if err != nil {
		return c, false, fmt.Errorf("%w: %s: %w (remove it to recover from a full scan)", ErrCorrupt, p, err)
	}
	return c, true, nil
}

// writeCheckpoint flushes the ConsumeQueues and writes a checkpoint of
// what is durable now (clean: written by Close, everything flushed). An
// unclean one that would say what the last one said is skipped.
func (s *Store) writeCheckpoint(clean bool) error {
	s.ckpt.Lock()
	defer s.ckpt.Unlock()
	return s.writeCheckpointLocked(clean, math.MaxInt64)
}

// writeCheckpointLocked is writeCheckpoint, claiming nothing at or past
// upTo (a cut's). Callers hold ckpt.
func (s *Store) writeCheckpointLocked(clean bool, upTo int64) error {
	return s.checkpointLocked(clean, upTo, nil)
}

// dispatchSample is the dispatched offset a periodic checkpoint saw.
type dispatchSample struct {
	at  time.Time
	off int64
}

// writeLazyCheckpoint is the periodic checkpoint: it syncs only the
// ConsumeQueues that ConsumeQueueFlushLeastEntries and
// ConsumeQueueFlushMaxDelay call for (consumequeue.FlushPolicy), and its
// dispatched offset stops below the first entry left unsynced. At 10,000
// queues written round-robin, syncing every one every second cost as many
// fsyncs a second, for about 200 bytes each.
func (s *Store) writeLazyCheckpoint() error {
	s.ckpt.Lock()
	defer s.ckpt.Unlock()
	now := s.clock()
	s.ckpt.seen = append(s.ckpt.seen, dispatchSample{now, s.dispatchOK.Load()})
	// Before: an offset dispatched at least MaxDelay ago (the newest such
	// sample; older ones are dropped). Until one is that old, nothing is
	// forced.
	p := consumequeue.FlushPolicy{
		MinPending: int64(s.opts.ConsumeQueueFlushLeastEntries),
		Share:      float64(s.opts.CheckpointInterval) / float64(s.opts.ConsumeQueueFlushMaxDelay),
	}
	cut := 0
	for i, smp := range s.ckpt.seen {
		if now.Sub(smp.at) < s.opts.ConsumeQueueFlushMaxDelay {
			break
		}
		p.Before, cut = smp.off, i
	}
	s.ckpt.seen = append(s.ckpt.seen[:0], s.ckpt.seen[cut:]...)
	return s.checkpointLocked(false, math.MaxInt64, &p)
}

// checkpointLocked writes a checkpoint after flushing the ConsumeQueues:
// all of them, or those lazy selects (writeLazyCheckpoint).
func (s *Store) checkpointLocked(clean bool, upTo int64, lazy *consumequeue.FlushPolicy) error {
	last := s.ckpt.last
	d := min(s.durable.Load(), upTo)
	x := min(s.dispatchOK.Load(), upTo)
	var err error
	if lazy == nil {
		err = s.cq.Flush()
	} else {
		var floor int64
		floor, err = s.cq.FlushSome(*lazy)
		// Every entry for a record below x was appended before x was
		// read; those FlushSome left unsynced lie at or past floor.
		x = min(x, floor)
	}
	if err != nil {
		if clean {
			return fmt.Errorf("storage: flush consume queues: %w", err)
		}
		s.logOnceFull(&s.hold.cqFlushFull, "storage: consume queue flush failed; the checkpoint keeps its dispatched offset", err)
		x = min(last.dispatched, upTo)
	} else {
		s.hold.cqFlushFull.Store(false)
	}
	s.flushKeyIndex()
	if clean && (d != s.written.Load() || x != d) {
		return fmt.Errorf("storage: internal: clean checkpoint with written %d, durable %d, dispatched %d", s.written.Load(), d, x)
	}
	if !clean && !last.clean && d == last.durable && x == last.dispatched && last.queues != nil {
		return nil
	}
	c := checkpoint{clean: clean, segSize: s.segSize, durable: d, dispatched: x, timeMs: s.clock().UnixMilli()}
	if c.queues, err = s.queueOffsetsBelow(min(d, x)); err != nil {
		return err
	}
	if err := s.writeFileAtomic(s.checkpointPath(), c.encode()); err != nil {
		return err
	}
	s.ckpt.last = c
	return nil
}

// queueOffsetsBelow returns, per queue, the number of offsets whose
// records lie below phys.
func (s *Store) queueOffsetsBelow(phys int64) (map[queueKey]int64, error) {
	out := make(map[queueKey]int64)
	var errs []error
	s.cq.Each(func(topic string, qid int32, q *consumequeue.Queue) {
		n, err := nextBelow(q, phys)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if n > 0 {
			out[queueKey{topic, qid}] = n
		}
	})
	return out, errors.Join(errs...)
}

// nextBelow returns the first queue offset of q whose record lies at or
// past phys (MaxOffset if none does).
func nextBelow(q *consumequeue.Queue, phys int64) (int64, error) {
	hi := q.MaxOffset()
	last, ok := q.LastEntry()
	if !ok || last.PhysOffset < phys {
		return hi, nil
	}
	lo := q.MinOffset()
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.Entry(mid)
		if err != nil {
			return 0, fmt.Errorf("storage: checkpoint %v: %w", q, err)
		}
		if e.PhysOffset >= phys {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// writeFileAtomic replaces name with b durably: temp file, write, fsync,
// rename, fsync of the directory. A failure before the rename leaves name
// as it was and removes the temp file (on a full disk it holds space).
func (s *Store) writeFileAtomic(name string, b []byte) error {
	tmp := name + ".tmp"
	if err := s.writeTemp(tmp, b); err != nil {
		if rerr := s.fs.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			s.log.Warn("storage: could not remove a temp file", "path", tmp, "err", rerr)
		}
		return err
	}
	if err := s.fs.Rename(tmp, name); err != nil {
		return fmt.Errorf("storage: rename %s: %w", tmp, err)
	}
	if err := s.fs.SyncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", filepath.Dir(name), err)
	}
	return nil
}

// writeTemp writes b to the file tmp (created or truncated) and syncs it.
func (s *Store) writeTemp(tmp string, b []byte) error {
	f, err := s.fs.Create(tmp, vfsOpts)
	if err != nil {
		return writeError("create "+tmp, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		_ = f.Close()
		return writeError("write "+tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("storage: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: close %s: %w", tmp, err)
	}
	return nil
}

// runBackground is the goroutine of the periodic jobs: a checkpoint every
// CheckpointInterval and retention every Retention.CheckInterval. Woken by
// its tickers; exits when Close closes stop.background.
func (s *Store) runBackground() {
	defer s.wg.Done()
	defer s.startScrubber()() // scrub.go: runs beside this goroutine, waited for on exit
	ck := time.NewTicker(s.opts.CheckpointInterval)
	defer ck.Stop()
	rt := time.NewTicker(s.opts.Retention.CheckInterval)
	defer rt.Stop()
	for {
		select {
		case <-ck.C:
			if err := s.writeLazyCheckpoint(); err != nil {
				s.logOnceFull(&s.hold.ckptFull, "storage: checkpoint failed", err)
			} else if s.hold.ckptFull.Swap(false) {
				s.log.Info("storage: checkpoint written again after a full disk")
			}
		case <-rt.C:
			if _, err := s.ApplyRetention(); err != nil {
				s.log.Error("storage: retention failed", "err", err)
			}
		case <-s.stop.background:
			return
		}
	}
}

// Checkpoint flushes the ConsumeQueues and writes a checkpoint now (the
// background job does so every CheckpointInterval).
func (s *Store) Checkpoint() error {
	if err := s.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return ErrClosed
	}
	return s.writeCheckpoint(false)
}
