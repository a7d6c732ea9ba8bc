package storage

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/record"
)

// ApplyRetention deletes whole CommitLog segments, oldest first, while the
// oldest is older than Retention.MaxAge (its newest record; a segment
// with no record counts as old) or the disk is fuller than
// Retention.DiskRatio. It never deletes the active segment or one holding
// bytes not yet durable or whose ConsumeQueue entries are not yet durable
// (the last checkpoint's dispatched offset). The ConsumeQueues then drop
// their files below the new min offset. It returns how many segments went.
// On a full disk it still deletes up to the last checkpoint written.
// The background job runs it every Retention.CheckInterval.
func (s *Store) ApplyRetention() (int, error) {
	s.retainMu.Lock()
	defer s.retainMu.Unlock()
	if s.isClosed() {
		return 0, ErrClosed
	}
	r := s.opts.Retention
	if list := s.segmentsSnapshot(); len(list) > 1 &&
		list[0].end(s.segSize) <= min(s.durable.Load(), s.dispatched.Load()) {
		// Make the queues' entries for the oldest segment durable first.
		// On a full disk the checkpoint cannot be written, but the last
		// one still bounds what may go (retainable), and deleting is what
		// frees space: go on.
		if err := s.writeCheckpoint(false); err != nil && !errors.Is(err, syscall.ENOSPC) {
			return 0, err
		}
	}
	deleted := 0
	for {
		list := s.segmentsSnapshot()
		if len(list) < 2 {
			break
		}
		g := list[0]
		if g.end(s.segSize) > s.retainable() {
			break
		}
		why, err := s.expired(g, r)
		if err != nil {
			return deleted, err
		}
		if why == "" {
			break
		}
		if err := s.deleteSegment(g, why); err != nil {
			return deleted, err
		}
		deleted++
	}
	if deleted == 0 {
		return 0, nil
	}
	min := s.CommitLogMinOffset()
	var errs []error
	if err := s.expireKeyIndex(); err != nil {
		errs = append(errs, fmt.Errorf("storage: retention of the message index: %w", err))
	}
	s.cq.Each(func(topic string, qid int32, q *consumequeue.Queue) {
		if err := q.DeleteBelowPhys(min); err != nil {
			errs = append(errs, fmt.Errorf("storage: retention of consume queue %s/%d: %w", topic, qid, err))
		}
	})
	return deleted, errors.Join(errs...)
}

// retainable is how far segments may be deleted: everything below it is
// durable and its ConsumeQueue entries are durable too (the last
// checkpoint's dispatched offset). Deleting past that, a crash could leave
// queues missing entries for records that no longer exist, and recovery
// could not re-index the records after them.
func (s *Store) retainable() int64 {
	s.ckpt.Lock()
	x := s.ckpt.last.dispatched
	s.ckpt.Unlock()
	return min(s.durable.Load(), s.dispatched.Load(), x)
}

// expired says why g should go ("" if it should stay).
func (s *Store) expired(g *segment, r RetentionOptions) (string, error) {
	if r.MaxAge > 0 {
		ts, has, err := s.newestRecord(g)
		if err != nil {
			return "", err
		}
		if !has {
			return "no records", nil
		}
		if age := s.clock().Sub(time.UnixMilli(ts)); age > r.MaxAge {
			return fmt.Sprintf("newest record %v old", age.Round(time.Second)), nil
		}
	}
	if r.DiskRatio > 0 {
		total, free, err := s.fs.DiskUsage(s.clDir)
		if err != nil {
			return "", fmt.Errorf("storage: disk usage of %s: %w", s.clDir, err)
		}
		if total > 0 {
			if used := 1 - float64(free)/float64(total); used > r.DiskRatio {
				return fmt.Sprintf("disk %.0f%% used", used*100), nil
			}
		}
	}
	return "", nil
}

// newestRecord returns the store time of g's newest record, walking the
// segment the first time it is not known (a segment from before the
// recovery scan).
func (s *Store) newestRecord(g *segment) (int64, bool, error) {
	if g.hasRecords.Load() {
		return g.lastTs.Load(), true, nil
	}
	if g.lastTs.Load() < 0 {
		return 0, false, nil // walked before: no records
	}
	// No lock: only retention (under retainMu) closes g.
	r := &segReader{f: g.seg, size: g.seg.Written()}
	var last int64
	has := false
	pos := int64(0)
	for pos+record.BlankSize <= r.size {
		h, err := r.at(pos, 80)
		if err != nil {
			return 0, false, fmt.Errorf("storage: walk %s: %w", g.path, err)
		}
		size, magic, err := record.Header(h)
		if err != nil || magic != record.MagicMessage || size <= 0 {
			break
		}
		if len(h) >= record.StoreTimeOffset(record.SysFlagOf(h))+8 {
			last, has = record.StoreTimestampOf(h), true
		}
		pos += int64(size)
	}
	if has {
		g.lastTs.Store(last)
		g.hasRecords.Store(true)
	} else {
		g.lastTs.Store(-1)
	}
	return last, has, nil
}

// deleteSegment takes g (the oldest) out of the list, closes and removes
// its file durably.
func (s *Store) deleteSegment(g *segment, why string) error {
	s.segs.Lock()
	if len(s.segs.list) == 0 || s.segs.list[0] != g {
		s.segs.Unlock()
		return nil
	}
	s.segs.list = append([]*segment(nil), s.segs.list[1:]...)
	s.segs.Unlock()
	s.m.addDeleted(g.seg.Stats())
	s.log.Info("storage: retention deletes a segment", "segment", g.path, "why", why)
	if err := g.seg.Close(); err != nil {
		s.log.Warn("storage: close of a deleted segment", "segment", g.path, "err", err)
	}
	if err := s.fs.Remove(g.path); err != nil {
		return fmt.Errorf("storage: remove %s: %w", g.path, err)
	}
	if err := s.fs.SyncDir(s.clDir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", s.clDir, err)
	}
	s.m.segmentsDeleted.Add(1)
	return nil
}
