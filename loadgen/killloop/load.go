package killloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

// Topic is the one topic a run writes, on the broker group BrokerName
// (not the same name: a broker's name is a system topic of its own).
const (
	Topic      = "durability-kill"
	BrokerName = "durability-broker"
)

// FailBackoff is how long a producer or live reader waits after a
// failure (broker down): short, since recovery is measured to the first
// success.
const FailBackoff = 5 * time.Millisecond

// Body is a load message's body: the id, a newline, padding to size.
func Body(id string, size int) []byte {
	b := make([]byte, max(size, len(id)+1))
	copy(b, id)
	b[len(id)] = '\n'
	for i := len(id) + 1; i < len(b); i++ {
		b[i] = 'x'
	}
	return b
}

// IDOf reads the id back from a Body ("" if it has none).
func IDOf(b []byte) string {
	i := bytes.IndexByte(b, '\n')
	if i <= 0 {
		return ""
	}
	return string(b[:i])
}

// ParseID splits a load id "p<producer>-<seq>" into its producer and
// sequence number.
func ParseID(id string) (producer int, seq int64, ok bool) {
	rest, found := strings.CutPrefix(id, "p")
	if !found {
		return 0, 0, false
	}
	ps, ss, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(ps)
	s, err2 := strconv.ParseInt(ss, 10, 64)
	if err1 != nil || err2 != nil || p < 0 || s < 0 {
		return 0, 0, false
	}
	return p, s, true
}

// ClientOptions are the settings every client of a run shares: the
// client's defaults (RouteRefresh 30 s, 3 s timeouts), so that recovery is
// what an application with a default client sees.
func ClientOptions(namesrv string) client.ClientOptions {
	return client.ClientOptions{NameServers: []string{namesrv}}
}

// CreateTopic creates Topic with queues queues on the broker at
// brokerAddr, retrying until timeout (the broker may still be
// registering); a refusal is not retried.
func CreateTopic(ctx context.Context, namesrv, brokerAddr string, queues int, timeout time.Duration) error {
	a, err := client.NewAdmin(ClientOptions(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }() // Admin.Close reports nothing
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err = a.CreateTopic(ctx, Topic, client.TopicOptions{Queues: queues, Brokers: []string{brokerAddr}})
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

// LoadOptions configure a Load.
type LoadOptions struct {
	// NameServer is the run's name server.
	NameServer string
	// Producers send concurrently, one synchronous send each at a time,
	// with no client retries; BodySize is each Body's size.
	Producers, BodySize int
	// Group is the producers' group.
	Group string
	// SendTimeout is each producer's (RocketMQ's sendMsgTimeout).
	SendTimeout time.Duration
	// LiveQueues, if not 0, starts a live reader of that many queues:
	// long-polling pulls from offset 0 that record every id read in the
	// ledger (Ledger.Seen, Ledger.Backwards).
	LiveQueues int
	// OnAck, if set, is called after each SEND_OK is in the ledger, with
	// the time and the answer's store host (ok false: the offset message
	// id did not parse). It runs on the producer's goroutine.
	OnAck func(at time.Time, host netip.AddrPort, ok bool)
}

// Load is a run's producers (and live reader): every SEND_OK goes to the
// ledger with its queue, queue offset and CommitLog offset; a send
// answered with another status (stored, not acknowledged) is recorded as
// stored only. Its methods are safe for concurrent use.
type Load struct {
	o        LoadOptions
	ledger   *Ledger
	stopping chan struct{} // closed by Stop
	wg       sync.WaitGroup
	clients  []interface{ Close() error }
	stopOnce sync.Once
	stopErr  error
	// notOK counts sends answered with another status than SEND_OK,
	// failed those with no answer.
	notOK, failed atomic.Int64
}

// StartLoad starts the producers and, with LiveQueues, the live reader.
// They run until Stop; every send and pull is bounded by the client's
// timeouts.
func StartLoad(o LoadOptions, l *Ledger) (*Load, error) {
	ld := &Load{o: o, ledger: l, stopping: make(chan struct{})}
	for i := 0; i < o.Producers; i++ {
		p, err := client.NewProducer(client.ProducerOptions{ClientOptions: ClientOptions(o.NameServer),
			Group: o.Group, SendTimeout: o.SendTimeout, Retries: -1, DisableFaultAvoidance: true})
		if err != nil {
			return nil, errors.Join(err, ld.Stop(time.Second))
		}
		ld.clients = append(ld.clients, p)
		ld.wg.Add(1)
		go ld.produce(i, p)
	}
	if o.LiveQueues == 0 {
		return ld, nil
	}
	c, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: ClientOptions(o.NameServer), Group: "durability-live"})
	if err != nil {
		return nil, errors.Join(err, ld.Stop(time.Second))
	}
	ld.clients = append(ld.clients, c)
	for q := 0; q < o.LiveQueues; q++ {
		ld.wg.Add(1)
		go ld.pull(c, q)
	}
	return ld, nil
}

// Go runs f on a goroutine of its own that Stop waits for: f returns
// once stop is closed.
func (ld *Load) Go(f func(stop <-chan struct{})) {
	ld.wg.Add(1)
	go func() {
		defer ld.wg.Done()
		f(ld.stopping)
	}()
}

// NotOK counts the sends answered with another status than SEND_OK
// (a SYNC_MASTER's SLAVE_NOT_AVAILABLE: stored, not acknowledged), Failed
// those that failed with no answer.
func (ld *Load) NotOK() int64  { return ld.notOK.Load() }
func (ld *Load) Failed() int64 { return ld.failed.Load() }

func (ld *Load) stopped() bool { return closed(ld.stopping) }

// pause waits d, or less if the load is stopping.
func (ld *Load) pause(d time.Duration) { Wait(ld.stopping, d) }

// Wait waits d, or less if stop closes first; it reports whether stop
// did.
func Wait(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return true
	case <-t.C:
		return false
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// produce is producer i's goroutine: it owns p's sends, one at a time,
// until Stop. Ids are p<i>-<seq>, never sent twice.
func (ld *Load) produce(i int, p *client.Producer) {
	defer ld.wg.Done()
	for seq := 0; !ld.stopped(); seq++ {
		id := fmt.Sprintf("p%d-%d", i, seq)
		ld.ledger.Sent()
		res, err := p.Send(context.Background(), &client.Message{Topic: Topic, Body: Body(id, ld.o.BodySize)})
		switch {
		case err == nil && res.Status == client.SendOK:
			now := time.Now()
			host, phys, ok := offsetOf(res.OffsetMsgID)
			ld.ledger.AckedAt(id, Pos{res.Queue.QueueID, res.QueueOffset}, phys, now)
			if ld.o.OnAck != nil {
				ld.o.OnAck(now, host, ok)
			}
			continue
		case res != nil: // stored, not flushed or not replicated in time (res and err): not an acknowledgement
			ld.notOK.Add(1)
			_, phys, _ := offsetOf(res.OffsetMsgID)
			ld.ledger.StoredOnly(id, Pos{res.Queue.QueueID, res.QueueOffset}, phys, res.Status.String())
		default:
			ld.failed.Add(1)
		}
		ld.pause(FailBackoff)
	}
}

// offsetOf is the store host and CommitLog offset an offset message id
// names; -1 and false if it names none.
func offsetOf(offsetMsgID string) (netip.AddrPort, int64, bool) {
	host, phys, err := protocol.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		return netip.AddrPort{}, -1, false
	}
	return host, phys, true
}

// pull is queue q's live reader: long-polling pulls from offset 0,
// following the broker's next offset, until Stop.
func (ld *Load) pull(c *client.PullConsumer, q int) {
	defer ld.wg.Done()
	mq := client.MessageQueue{Topic: Topic, BrokerName: BrokerName, QueueID: q}
	var off int64
	for !ld.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		res, err := c.Pull(ctx, mq, off, client.PullOptions{MaxMessages: 64, Wait: time.Second})
		cancel()
		if err != nil {
			ld.pause(FailBackoff)
			continue
		}
		for _, m := range res.Messages {
			ld.ledger.Seen(IDOf(m.Body), Pos{q, m.QueueOffset})
		}
		if res.NextOffset < off {
			ld.ledger.Backwards()
		}
		off = res.NextOffset
		if res.Status != client.PullFound {
			ld.pause(FailBackoff)
		}
	}
}

// Stop ends the load and waits (up to timeout) for its goroutines, then
// closes its clients. Later calls return the first one's error.
func (ld *Load) Stop(timeout time.Duration) error {
	ld.stopOnce.Do(func() { ld.stopErr = ld.stopNow(timeout) })
	return ld.stopErr
}

func (ld *Load) stopNow(timeout time.Duration) error {
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
