package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// FillOptions say what Group.Fill writes.
type FillOptions struct {
	Topic  string
	Queues int   // the messages go round over queues 0..Queues-1 (at least 1)
	Bytes  int64 // how far the CommitLog grows, at least
	Size   int   // each message's body, in bytes
	Tag    string
}

// fillBatch is how many messages one append of Fill carries.
const fillBatch = 256

// Fill appends batches of 256 messages straight into the group master's
// store, not through the network (an experiment's fill is not what it
// measures), until the CommitLog has grown by o.Bytes, then flushes them:
// the backlog is on disk before an experiment drops it from the page
// cache or starts a slave copying it (master and slave share one disk
// here, where in production they do not). It returns how many messages
// and CommitLog bytes it appended. The topic need not exist on the broker.
func (g *Group) Fill(ctx context.Context, o FillOptions) (msgs, bytes int64, err error) {
	st := g.Broker.Store()
	body := make([]byte, o.Size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	props := record.AppendProperty(nil, "TAGS", o.Tag)
	host := netip.MustParseAddrPort("127.0.0.1:40000")
	queues := max(o.Queues, 1)
	batch := make([]*storage.Message, fillBatch)
	for i := range batch {
		batch[i] = &storage.Message{Topic: o.Topic, QueueID: int32(i % queues), Body: body, Properties: props,
			BornHost: host, StoreHost: host}
	}
	from := st.HandedOffset()
	for st.HandedOffset()-from < o.Bytes {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		if _, err := st.AppendBatch(ctx, batch); err != nil {
			return 0, 0, err
		}
		msgs += int64(len(batch))
	}
	handed := st.HandedOffset()
	for st.DurableOffset() < handed {
		if err := st.FlushTo(ctx, handed); err != nil && !errors.Is(err, storage.ErrFlushTimeout) {
			return 0, 0, fmt.Errorf("flush the fill: %w", err)
		}
	}
	return msgs, handed - from, nil
}
