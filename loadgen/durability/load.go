package durability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/samsamq/samsa/client"
)

// topic is the one topic a run writes, on the broker brokerName (not the
// same name: a broker's name is a system topic of its own).
const (
	topic      = "durability-kill"
	brokerName = "durability-broker"
)

// failBackoff is how long a producer or puller waits after a failure
// (broker down): short, since recovery is measured to the first success.
const failBackoff = 5 * time.Millisecond

// body is a message body: the id, a newline, padding to size.
func body(id string, size int) []byte {
	b := make([]byte, max(size, len(id)+1))
	copy(b, id)
	b[len(id)] = '\n'
	for i := len(id) + 1; i < len(b); i++ {
		b[i] = 'x'
	}
	return b
}

// idOf reads the id back from a body ("" if it has none).
func idOf(b []byte) string {
	i := bytes.IndexByte(b, '\n')
	if i <= 0 {
		return ""
	}
	return string(b[:i])
}

// clientOptions are the settings every client of the run shares: the
// client's defaults (RouteRefresh 30 s, 3 s timeouts), so that recovery is
// what an application with a default client sees.
func clientOptions(namesrv string) client.ClientOptions {
	return client.ClientOptions{NameServers: []string{namesrv}}
}

// createTopic creates the run's topic on the broker, retrying until the
// deadline (the broker may still be registering).
func createTopic(ctx context.Context, namesrv, brokerAddr string, queues int, timeout time.Duration) error {
	a, err := client.NewAdmin(clientOptions(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }() // Admin.Close reports nothing
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err = a.CreateTopic(ctx, topic, client.TopicOptions{Queues: queues, Brokers: []string{brokerAddr}})
		var answer *client.ResponseError
		if err == nil || ctx.Err() != nil || errors.As(err, &answer) {
			return err // done, out of time, or refused: retrying will not help
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create topic: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// brokerDurability is the durability level the running broker states in
// its text stats (store_durability), or "" if it states none.
func brokerDurability(ctx context.Context, namesrv, brokerAddr string) string {
	a, err := client.NewAdmin(clientOptions(namesrv))
	if err != nil {
		return ""
	}
	defer func() { _ = a.Close() }() // Admin.Close reports nothing
	stats, err := a.BrokerStats(ctx, brokerAddr)
	if err != nil {
		return ""
	}
	for _, s := range stats {
		if s.Name == "store_durability" {
			return s.Value
		}
	}
	return ""
}

// load is the producers and the live consumer of a run.
type load struct {
	opts     *Options
	namesrv  string
	ledger   *Ledger
	stopping chan struct{} // closed by stop
	wg       sync.WaitGroup
	clients  []interface{ Close() error }
	stopOnce sync.Once
	stopErr  error
}

// startLoad starts the producers and, with live, one puller per queue.
// They run until stop; every send and pull is bounded by the client's
// timeouts.
func startLoad(o *Options, namesrv string, l *Ledger, live bool) (*load, error) {
	ld := &load{opts: o, namesrv: namesrv, ledger: l, stopping: make(chan struct{})}
	for i := 0; i < o.Producers; i++ {
		p, err := client.NewProducer(client.ProducerOptions{ClientOptions: clientOptions(namesrv),
			Group: "durability-producer", SendTimeout: 3 * time.Second, Retries: -1, DisableFaultAvoidance: true})
		if err != nil {
			return nil, errors.Join(err, ld.stop(time.Second))
		}
		ld.clients = append(ld.clients, p)
		ld.wg.Add(1)
		go ld.produce(i, p)
	}
	if !live {
		return ld, nil
	}
	c, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: clientOptions(namesrv), Group: "durability-live"})
	if err != nil {
		return nil, errors.Join(err, ld.stop(time.Second))
	}
	ld.clients = append(ld.clients, c)
	for q := 0; q < o.Queues; q++ {
		ld.wg.Add(1)
		go ld.pull(c, q)
	}
	return ld, nil
}

func (ld *load) stopped() bool {
	select {
	case <-ld.stopping:
		return true
	default:
		return false
	}
}

// pause waits d, or less if the load is stopping.
func (ld *load) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ld.stopping:
	case <-t.C:
	}
}

// produce is producer i's goroutine: it owns p's sends, one at a time,
// until stop. Ids are p<i>-<seq>, never sent twice.
func (ld *load) produce(i int, p *client.Producer) {
	defer ld.wg.Done()
	for seq := 0; !ld.stopped(); seq++ {
		id := fmt.Sprintf("p%d-%d", i, seq)
		ld.ledger.Sent()
		res, err := p.Send(context.Background(), &client.Message{Topic: topic, Body: body(id, ld.opts.BodySize)})
		switch {
		case err == nil && res.Status == client.SendOK:
			ld.ledger.AckedAt(id, Pos{res.Queue.QueueID, res.QueueOffset}, physOf(res.OffsetMsgID), time.Now())
			continue
		case res != nil: // stored, not flushed or not replicated in time (res and err): not an acknowledgement
			ld.ledger.StoredOnly(id, Pos{res.Queue.QueueID, res.QueueOffset}, physOf(res.OffsetMsgID), res.Status.String())
		}
		ld.pause(failBackoff)
	}
}

// pull is queue q's live reader: long-polling pulls from offset 0,
// following the broker's next offset, until stop.
func (ld *load) pull(c *client.PullConsumer, q int) {
	defer ld.wg.Done()
	mq := client.MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: q}
	var off int64
	for !ld.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		res, err := c.Pull(ctx, mq, off, client.PullOptions{MaxMessages: 64, Wait: time.Second})
		cancel()
		if err != nil {
			ld.pause(failBackoff)
			continue
		}
		for _, m := range res.Messages {
			ld.ledger.Seen(idOf(m.Body), Pos{q, m.QueueOffset})
		}
		if res.NextOffset < off {
			ld.ledger.Backwards()
		}
		off = res.NextOffset
		if res.Status != client.PullFound {
			ld.pause(failBackoff)
		}
	}
}

// stop ends the load and waits (up to timeout) for its goroutines. Later
// calls return the first one's error.
func (ld *load) stop(timeout time.Duration) error {
	ld.stopOnce.Do(func() { ld.stopErr = ld.stopNow(timeout) })
	return ld.stopErr
}

func (ld *load) stopNow(timeout time.Duration) error {
	close(ld.stopping)
	done := make(chan struct{})
	go func() { ld.wg.Wait(); close(done) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case <-done:
	case <-t.C:
		err = fmt.Errorf("load did not stop within %v", timeout)
	}
	for _, c := range ld.clients {
		if cerr := c.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close a client: %w", cerr))
		}
	}
	return err
}

// readBack reads every queue from offset 0 to its end into the ledger.
// It returns the messages read and a note per queue it could not read to
// the end.
func readBack(ctx context.Context, namesrv string, queues int, l *Ledger, timeout time.Duration) (n int64, short []string, err error) {
	c, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: clientOptions(namesrv), Group: "durability-readback"})
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = c.Close() }() // PullConsumer.Close reports nothing
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := queueReader{c: c, queues: queues, put: func(id string, p Pos, _ *client.MessageExt) { l.Final(id, p) }}
	return r.read(ctx)
}

// queueReader reads every queue of the run's topic from offset 0 to its
// end: from the broker the route names (addr ""), or from addr alone (a
// slave's copy, read without changing it: pulls commit nothing).
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
	mq := client.MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: q}
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
			r.put(idOf(m.Body), Pos{q, m.QueueOffset}, m)
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

// physOf is the CommitLog offset an offset message id names (its last
// 16 hex digits: RocketMQ's store host, then the offset), -1 if it
// names none.
func physOf(offsetMsgID string) int64 {
	if len(offsetMsgID) < 16 {
		return -1
	}
	v, err := strconv.ParseUint(offsetMsgID[len(offsetMsgID)-16:], 16, 63)
	if err != nil {
		return -1
	}
	return int64(v)
}
