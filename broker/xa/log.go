package xa

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Log is where the branch records go (Config.Log). StoreLog is the
// broker's.
type Log interface {
	// Append stores one record body under LogTopic and returns its
	// queue offset there (-1 when it is not stored). With durable it
	// returns once the record is as durable as the broker promises a
	// send: flushed to disk, and on a SYNC_MASTER held by its slaves; an
	// error then means it may not be (the offset says whether it is
	// stored). Without, it returns once the record is stored (a
	// decision or floor record, which a crash may lose: a settled
	// branch is then listed again and settling it again writes
	// nothing; a replay starts from an older floor).
	Append(ctx context.Context, kind byte, body []byte, durable bool) (int64, error)
	// Scan calls fn with each record of LogTopic from queue offset from
	// (clamped to what is stored), in log order.
	Scan(from int64, fn func(off int64, body []byte)) error
	// ScanBack calls fn with each record of LogTopic from the last
	// backwards, until fn returns true.
	ScanBack(fn func(off int64, body []byte) bool) error
}

// LogStore is what StoreLog reads of the log. *storage.Store has it.
type LogStore interface {
	GetMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int,
		tagFilter func(tagsCode int64) bool) (storage.GetResult, error)
	MinQueueOffset(topic string, queueID int32) int64
	MaxQueueOffset(topic string, queueID int32) int64
}

// StoreLog keeps the branch records in the broker's CommitLog.
type StoreLog struct {
	Store LogStore
	// Write stores m and, with durable, waits for the durability the
	// broker promises a send (flush, and its slaves on a SYNC_MASTER).
	// It returns m's queue offset, -1 when m is not stored.
	Write func(ctx context.Context, m *storage.Message, durable bool) (int64, error)
	// StoreHost is stamped in the records. nil: the zero address.
	StoreHost func() netip.AddrPort
	Now       func() time.Time // default time.Now
}

// Append writes one record (Log).
func (l StoreLog) Append(ctx context.Context, kind byte, body []byte, durable bool) (int64, error) {
	var host netip.AddrPort
	if l.StoreHost != nil {
		host = l.StoreHost()
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	props := record.AppendProperty(nil, record.PropertyTags, string(kind))
	m := &storage.Message{Topic: LogTopic, Body: body, Properties: props, TagsCode: record.TagsCodeOf(props),
		BornTimestamp: now().UnixMilli(), BornHost: host, StoreHost: host}
	return l.Write(ctx, m, durable)
}

// scanBatch is how many records a read of LogTopic takes.
const scanBatch = 256

// Scan reads LogTopic queue 0 from from (Log). A corrupt record is
// skipped (fn never sees it); a read that fails otherwise stops the scan
// with its error.
func (l StoreLog) Scan(from int64, fn func(off int64, body []byte)) error {
	st := l.Store
	end := st.MaxQueueOffset(LogTopic, 0)
	return l.read(max(from, st.MinQueueOffset(LogTopic, 0)), end, func(off int64, body []byte) bool {
		fn(off, body)
		return false
	})
}

// ScanBack reads LogTopic queue 0 from its end backwards, a batch at a
// time (Log).
func (l StoreLog) ScanBack(fn func(off int64, body []byte) bool) error {
	st := l.Store
	lo := st.MinQueueOffset(LogTopic, 0)
	type rec struct {
		off  int64
		body []byte
	}
	var batch []rec
	for end := st.MaxQueueOffset(LogTopic, 0); end > lo; end -= scanBatch {
		from := max(lo, end-scanBatch)
		batch = batch[:0]
		if err := l.read(from, end, func(off int64, body []byte) bool {
			batch = append(batch, rec{off, append([]byte(nil), body...)})
			return false
		}); err != nil {
			return err
		}
		for i := len(batch) - 1; i >= 0; i-- {
			if fn(batch[i].off, batch[i].body) {
				return nil
			}
		}
	}
	return nil
}

// read calls fn with the records of [from, end) until it returns true.
func (l StoreLog) read(from, end int64, fn func(off int64, body []byte) bool) error {
	st := l.Store
	for off := from; off < end; {
		res, err := st.GetMessages(LogTopic, 0, off, int(min(scanBatch, end-off)), 0, nil)
		if err != nil && len(res.Records) == 0 {
			var ce *storage.CorruptRecordError
			if errors.As(err, &ce) && res.NextOffset > off {
				off = res.NextOffset
				continue
			}
			return fmt.Errorf("xa: read %s at %d: %w", LogTopic, off, err)
		}
		if len(res.Records) == 0 || res.NextOffset <= off {
			break
		}
		for i, raw := range res.Records {
			var r record.Record
			if record.DecodeUnchecked(raw, &r) != nil {
				continue
			}
			if fn(res.QueueOffsets[i], r.Body) {
				return nil
			}
		}
		off = res.NextOffset
	}
	return nil
}
