package txn

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// rebuild rebuilds the state of the half messages from the progress and
// the op queue (the package doc's "Progress"): the halves below the half
// progress are settled, an op record read from the op progress on settles
// its half, the rest are open. Then the saved check counts are loaded.
func (s *Service) rebuild() error {
	st, log := s.cfg.Store, s.cfg.Logger
	base, ok := s.cfg.Progress.Query(HalfTopic)
	if !ok {
		base = 0
	}
	base = max(base, st.MinQueueOffset(HalfTopic, 0))
	t := newTxnState(base, st.MaxQueueOffset(HalfTopic, 0))
	opFrom, ok := s.cfg.Progress.Query(OpHalfTopic)
	if !ok {
		opFrom = 0
	}
	opFrom = max(opFrom, st.MinQueueOffset(OpHalfTopic, 0))
	end := st.MaxQueueOffset(OpHalfTopic, 0)
	ops, open := 0, 0
	for off := opFrom; off < end; {
		res, err := st.GetMessages(OpHalfTopic, 0, off, 256, 0, nil)
		if err != nil && len(res.Records) == 0 {
			var ce *storage.CorruptRecordError
			if errors.As(err, &ce) && res.NextOffset > off {
				log.Warn("broker: a corrupt op record is skipped; its half message may be checked back again", "offset", off, "err", err)
				off = res.NextOffset
				continue
			}
			return fmt.Errorf("broker: read the transaction op queue at %d: %w", off, err)
		}
		if len(res.Records) == 0 {
			break
		}
		for i, rec := range res.Records {
			var r record.Record
			err := record.DecodeUnchecked(rec, &r)
			var k int64
			if err == nil {
				k, err = opHalfOffset(r.Body)
			}
			if err != nil {
				log.Warn("broker: op record ignored", "offset", res.QueueOffsets[i], "err", err)
				continue
			}
			if k >= base {
				t.settled(k, res.QueueOffsets[i])
				ops++
			}
		}
		off = res.NextOffset
	}
	var counts map[string]int
	// An unreadable file is set aside (package internal/jsonfile): open
	// half messages then start their check count afresh.
	if _, found := s.checksFile().LoadTolerant(func(raw []byte) error { return json.Unmarshal(raw, &counts) }); !found {
		counts = nil
	}
	t.loadCheckCounts(counts)
	s.st.Store(t)
	for k := base; k < t.startHalfMax; k++ {
		if t.state(k) == txnOpen {
			open++
		}
	}
	if open > 0 || ops > 0 {
		log.Info("broker: transactions recovered", "halfProgress", base, "opFrom", opFrom, "settledAbove", ops, "open", open)
	}
	return nil
}
