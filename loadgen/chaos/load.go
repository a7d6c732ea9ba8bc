package chaos

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// load is the producers of a run (a killloop.Load) and the role sampler.
// Every SEND_OK goes to the ledger and, with the answering broker (the
// store host of the answer's offset message id) and the time, to acks.
type load struct {
	*killloop.Load
	mu struct {
		sync.Mutex
		acks    []ackRec // in the order recorded
		brokers []string // ackRec.broker indexes it
		byHost  map[netip.AddrPort]uint16
		samples []RoleSample
	}
}

// loadStopTimeout bounds the load's stop (each send and poll is bounded
// by its own timeout).
const loadStopTimeout = 30 * time.Second

// ackRec is one acknowledgement as the load keeps it: no pointer, so that
// the millions of a long run cost the GC nothing to mark (see the
// ledger's msgID). acksSince turns a cycle's into Acks.
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

// startLoad starts o.Producers producers and a sampler polling brokers'
// `stats ha` every 100 ms.
func startLoad(o *Options, namesrv string, brokers []string, l *killloop.Ledger) (*load, error) {
	a, err := client.NewAdmin(killloop.ClientOptions(namesrv))
	if err != nil {
		return nil, err
	}
	ld := &load{}
	if ld.Load, err = killloop.StartLoad(killloop.LoadOptions{NameServer: namesrv, Producers: o.Producers, BodySize: o.BodySize,
		Group: "chaos-producer", SendTimeout: o.SendTimeout, OnAck: ld.record}, l); err != nil {
		_ = a.Close() // Admin.Close reports nothing
		return nil, err
	}
	ld.Go(func(stop <-chan struct{}) {
		defer func() { _ = a.Close() }()
		ld.sample(stop, a, brokers)
	})
	return ld, nil
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
