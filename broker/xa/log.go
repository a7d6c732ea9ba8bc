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
	// Append stores one record body under LogTopic. With durable it
	// returns once the record is as durable as the broker promises a
	// send: flushed to disk, and on a SYNC_MASTER held by its slaves; an
	// error then means it may not be. Without, it returns once the
	// record is stored (a decision record, which a crash may lose: the
	// branch is then listed again and settling it again writes nothing).
	Append(ctx context.Context, kind byte, body []byte, durable bool) error
	// Scan calls fn with each record body of LogTopic, in log order.
	Scan(fn func(body []byte)) error
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
	Write func(ctx context.Context, m *storage.Message, durable bool) error
	// StoreHost is stamped in the records. nil: the zero address.
	StoreHost func() netip.AddrPort
	Now       func() time.Time // default time.Now
}

// Append writes one record (Log).
func (l StoreLog) Append(ctx context.Context, kind byte, body []byte, durable bool) error {
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

// Scan reads LogTopic queue 0 from its first stored record (Log). A
// corrupt record is skipped (fn never sees it); a read that fails
// otherwise stops the scan with its error.
func (l StoreLog) Scan(fn func(body []byte)) error {
	st := l.Store
	end := st.MaxQueueOffset(LogTopic, 0)
	for off := st.MinQueueOffset(LogTopic, 0); off < end; {
		res, err := st.GetMessages(LogTopic, 0, off, 256, 0, nil)
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
		for _, raw := range res.Records {
			var r record.Record
			if record.DecodeUnchecked(raw, &r) != nil {
				continue
			}
			fn(r.Body)
		}
		off = res.NextOffset
	}
	return nil
}
