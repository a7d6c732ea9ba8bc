package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/loadgen/durability"
	"github.com/samsamq/samsa/protocol"
)

// load is the producers and the role sampler of a run. Every SEND_OK goes
// to the ledger and, with the answering broker (the store host of the
// answer's offset message id) and the time, to acks.
type load struct {
	o        *Options
	ledger   *durability.Ledger
	stopping chan struct{}
	wg       sync.WaitGroup
	clients  []interface{ Close() error }
	// notOK counts sends answered with another status than SEND_OK (a
	// SYNC_MASTER's SLAVE_NOT_AVAILABLE: stored, not acknowledged) and
	// failed those with no answer; a cycle reports its share.
	notOK, failed atomic.Int64
	mu            struct {
		sync.Mutex
		acks    []ackRec // in the order recorded
		brokers []string // ackRec.broker indexes it
		byHost  map[netip.AddrPort]uint16
		samples []RoleSample
	}
}

// ackRec is one acknowledgement as the load keeps it: no pointer, so that
// the millions of a long run cost the GC nothing to mark (see
// durability.msgID). acksSince turns a cycle's into Acks.
type ackRec struct {
	at     int64 // Unix nanoseconds
	broker uint16
}

// record appends an acknowledgement by the broker at host (ok false: its
// offset message id did not parse).
func (ld *load) record(at time.Time, host netip.AddrPort, ok bool) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if !ok {
		host = netip.AddrPort{}
	}
	b, known := ld.mu.byHost[host]
	if !known {
		if ld.mu.byHost == nil {
			ld.mu.byHost = map[netip.AddrPort]uint16{}
		}
		name := "?"
		if ok {
			name = host.String()
		}
		b = uint16(len(ld.mu.brokers))
		ld.mu.byHost[host] = b
		ld.mu.brokers = append(ld.mu.brokers, name)
	}
	ld.mu.acks = append(ld.mu.acks, ackRec{at: at.UnixNano(), broker: b})
}

func clientOptions(namesrv string) client.ClientOptions {
	return client.ClientOptions{NameServers: []string{namesrv}}
}

// startLoad starts o.Producers producers and a sampler polling brokers'
// `stats ha` every 100 ms.
func startLoad(o *Options, namesrv string, brokers []string, l *durability.Ledger) (*load, error) {
	ld := &load{o: o, ledger: l, stopping: make(chan struct{})}
	for i := range o.Producers {
		p, err := client.NewProducer(client.ProducerOptions{ClientOptions: clientOptions(namesrv),
			Group: "chaos-producer", SendTimeout: o.SendTimeout, Retries: -1, DisableFaultAvoidance: true})
		if err != nil {
			return nil, errors.Join(err, ld.stop())
		}
		ld.clients = append(ld.clients, p)
		ld.wg.Add(1)
		go ld.produce(i, p)
	}
	a, err := client.NewAdmin(clientOptions(namesrv))
	if err != nil {
		return nil, errors.Join(err, ld.stop())
	}
	ld.clients = append(ld.clients, a)
	ld.wg.Add(1)
	go ld.sample(a, brokers)
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

func (ld *load) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ld.stopping:
	case <-t.C:
	}
}

// produce is producer i's goroutine: one send at a time, ids p<i>-<seq>.
func (ld *load) produce(i int, p *client.Producer) {
	defer ld.wg.Done()
	for seq := 0; !ld.stopped(); seq++ {
		id := fmt.Sprintf("p%d-%d", i, seq)
		ld.ledger.Sent()
		res, err := p.Send(context.Background(), &client.Message{Topic: durability.Topic, Body: durability.Body(id, ld.o.BodySize)})
		switch {
		case err == nil && res.Status == client.SendOK:
			now := time.Now()
			host, phys, herr := protocol.ParseOffsetMsgID(res.OffsetMsgID)
			if herr != nil {
				phys = -1
			}
			ld.ledger.AckedAt(id, durability.Pos{Queue: res.Queue.QueueID, Offset: res.QueueOffset}, phys, now)
			ld.record(now, host, herr == nil)
			continue
		case res != nil:
			ld.notOK.Add(1)
			_, phys, _ := protocol.ParseOffsetMsgID(res.OffsetMsgID)
			ld.ledger.StoredOnly(id, durability.Pos{Queue: res.Queue.QueueID, Offset: res.QueueOffset}, phys, res.Status.String())
		default:
			ld.failed.Add(1)
		}
		ld.pause(5 * time.Millisecond)
	}
}

// sample is the role sampler: each broker's controller_role and
// controller_master_epoch every 100 ms until stop. A broker that does not
// answer (down, paused) is not sampled.
func (ld *load) sample(a *client.Admin, brokers []string) {
	defer ld.wg.Done()
	for !ld.stopped() {
		for _, b := range brokers {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := a.BrokerStats(ctx, b, "ha")
			cancel()
			if err != nil {
				continue
			}
			if s, ok := roleOf(b, st, time.Now()); ok {
				ld.mu.Lock()
				ld.mu.samples = append(ld.mu.samples, s)
				ld.mu.Unlock()
			}
		}
		ld.pause(100 * time.Millisecond)
	}
}

// brokerRole is a broker's controller-mode state from its `stats ha`.
type brokerRole struct {
	master, writable bool
	epoch            int64
	syncSet          int // members of the sync-state set it reports
}

func roleStateOf(st []protocol.Stat) (brokerRole, bool) {
	var r brokerRole
	found := false
	for _, s := range st {
		switch s.Name {
		case "controller_role":
			r.master, found = s.Value == "master", true
		case "controller_master_epoch":
			r.epoch, _ = strconv.ParseInt(s.Value, 10, 64)
		case "controller_writable":
			r.writable = s.Value == "1"
		case "controller_sync_set":
			v, _ := strconv.Unquote(s.Value)
			if v != "" {
				r.syncSet = len(strings.Split(v, ","))
			}
		}
	}
	return r, found
}

func roleOf(broker string, st []protocol.Stat, at time.Time) (RoleSample, bool) {
	r, ok := roleStateOf(st)
	return RoleSample{Broker: broker, Master: r.master, Epoch: r.epoch, At: at}, ok
}

// acksCopy is a copy of the acknowledgements (in time order).
func (ld *load) acksCopy() []Ack { return ld.acksSince(0) }

// mark is a position in the acknowledgements for acksSince: every one
// whose At is later than the call is recorded at or after it (At is read
// before the record is appended).
func (ld *load) mark() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return len(ld.mu.acks)
}

// acksSince is a copy, in time order, of the acknowledgements recorded
// since mark: a cycle's, not the run's (millions of them by the end of a
// long run; copying and sorting those every few milliseconds under the
// lock the producers record with stalled the producers and took a core
// from the cluster, exactly while a fail-over was being timed).
func (ld *load) acksSince(mark int) []Ack {
	ld.mu.Lock()
	recs := ld.mu.acks[mark:]
	out := make([]Ack, len(recs))
	for i, a := range recs {
		out[i] = Ack{At: time.Unix(0, a.at), Broker: ld.mu.brokers[a.broker]}
	}
	ld.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Ack) int { return a.At.Compare(b.At) })
	return out
}

func (ld *load) samplesCopy() []RoleSample {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return slices.Clone(ld.mu.samples)
}

// stop ends the load and waits for its goroutines (each send and poll is
// bounded by its timeout).
func (ld *load) stop() error {
	select {
	case <-ld.stopping:
		return nil
	default:
	}
	close(ld.stopping)
	done := make(chan struct{})
	go func() { ld.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("load did not stop within 30s")
	}
	for _, c := range ld.clients {
		if cerr := c.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close a client: %w", cerr))
		}
	}
	return err
}
