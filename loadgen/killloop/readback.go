package killloop

import (
	"context"
	"fmt"
	"time"

	"github.com/samsamq/samsa/client"
)

// ReadBack reads every queue of Topic, from the broker its route names,
// from offset 0 to its end into l (Ledger.Final). It returns the messages
// read and a note per queue it could not read to the end.
func ReadBack(ctx context.Context, namesrv string, queues int, l *Ledger, timeout time.Duration) (n int64, short []string, err error) {
	c, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: ClientOptions(namesrv), Group: "durability-readback"})
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = c.Close() }() // PullConsumer.Close reports nothing
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := queueReader{c: c, queues: queues, put: func(id string, p Pos, _ *client.MessageExt) { l.Final(id, p) }}
	return r.read(ctx)
}

// ReplicaRead is one read of a replica's copy.
type ReplicaRead struct {
	// Found is the id at each place; N counts the messages read.
	Found map[Pos]string
	N     int64
	// RecordBytes is the largest stored record seen.
	RecordBytes int64
	// Short notes the queues the read could not read to the end.
	Short []string
}

// ReadReplica reads every queue of Topic from the broker at addr alone
// (a slave's copy, read without changing it: pulls commit nothing).
func ReadReplica(ctx context.Context, c *client.PullConsumer, addr string, queues int) (*ReplicaRead, error) {
	rr := &ReplicaRead{Found: map[Pos]string{}}
	r := queueReader{c: c, addr: addr, queues: queues, put: func(id string, p Pos, m *client.MessageExt) {
		rr.Found[p] = id
		rr.RecordBytes = max(rr.RecordBytes, int64(m.StoreSize))
	}}
	var err error
	rr.N, rr.Short, err = r.read(ctx)
	return rr, err
}

// queueReader reads every queue of the run's topic from offset 0 to its
// end: from the broker the route names (addr ""), or from addr alone.
type queueReader struct {
	c      *client.PullConsumer
	addr   string
	queues int
	put    func(id string, p Pos, m *client.MessageExt)
}

// read returns the messages read and a note per queue it could not read
// to the end.
func (r queueReader) read(ctx context.Context) (n int64, short []string, err error) {
	for q := 0; q < r.queues; q++ {
		k, note, err := r.readQueue(ctx, q)
		n += k
		if err != nil {
			return n, short, err
		}
		if note != "" {
			short = append(short, note)
		}
	}
	return n, short, nil
}

// readQueue reads queue q up to its end: the route's broker's max offset
// asked first, or, from one address, the max offset its first answer
// names (nothing arrives there while it is read).
func (r queueReader) readQueue(ctx context.Context, q int) (n int64, short string, err error) {
	mq := client.MessageQueue{Topic: Topic, BrokerName: BrokerName, QueueID: q}
	end := int64(-1)
	if r.addr == "" {
		if end, err = r.c.MaxOffset(ctx, mq); err != nil {
			return 0, "", fmt.Errorf("read-back: max offset of queue %d: %w", q, err)
		}
	}
	// Each pull advances at least one offset or ends the queue: at most
	// end pulls, plus a few failed tries.
	off, fails, waits := int64(0), 0, 0
	for pulls := int64(0); (end < 0 || off < end) && pulls <= max(end, 0)+10; pulls++ {
		res, err := r.c.Pull(ctx, mq, off, client.PullOptions{MaxMessages: 1024, BrokerAddr: r.addr})
		if err != nil {
			if fails++; fails > 10 || ctx.Err() != nil {
				return n, "", fmt.Errorf("read-back: queue %d at %d: %w", q, off, err)
			}
			continue
		}
		if end < 0 {
			end = res.MaxOffset
		}
		for _, m := range res.Messages {
			r.put(IDOf(m.Body), Pos{q, m.QueueOffset}, m)
			n++
		}
		if off >= end {
			break
		}
		if res.Status == client.PullNoMatchedMessage && res.NextOffset == off && waits < maxRepairWaits && ctx.Err() == nil {
			// The broker holds the queue at a damaged record while it
			// fetches a healthy copy from a peer (PULL_RETRY_IMMEDIATELY):
			// pull the same offset again, a bounded number of times.
			waits++
			pulls--
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if res.Status != client.PullFound || res.NextOffset <= off {
			return n, fmt.Sprintf("queue %d: read-back stopped at offset %d of %d (%v, next %d)", q, off, end, res.Status, res.NextOffset), nil
		}
		off = res.NextOffset
	}
	return n, "", nil
}

// maxRepairWaits bounds the pulls a queue's read-back repeats at an offset
// the broker holds for a repair (50 ms apart: 30 s in all).
const maxRepairWaits = 600
