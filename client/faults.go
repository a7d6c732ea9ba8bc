package client

import (
	"sync"
	"time"
)

// brokerFaults remembers brokers to avoid for a while: one that failed a
// send, or answered slowly. The producer drops their queues from a keyless
// message's choice until the time is up (or every broker is avoided).
// RocketMQ's MQFaultStrategy: a latency of at least latencyMax[i] avoids the
// broker for avoidFor[i]; a failure counts as FailureLatency. Safe for
// concurrent use; the clock is injected.
type brokerFaults struct {
	now      func() time.Time
	latency  []time.Duration
	avoidFor []time.Duration

	mu struct {
		sync.Mutex
		until map[string]time.Time // broker name → avoid until
	}
}

// RocketMQ's default tables (MQFaultStrategy.latencyMax, notAvailableDuration).
var (
	defaultLatencySteps = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 550 * time.Millisecond,
		1800 * time.Millisecond, 3 * time.Second, 5 * time.Second, 15 * time.Second}
	defaultAvoidSteps = []time.Duration{0, 0, 2 * time.Second, 5 * time.Second, 6 * time.Second,
		10 * time.Second, 30 * time.Second}
)

// FailureLatency is the latency a failed send counts as: 10 s, so a broker
// that failed is avoided for 10 s with the default table.
const FailureLatency = 10 * time.Second

func newBrokerFaults(now func() time.Time) *brokerFaults {
	f := &brokerFaults{now: now, latency: defaultLatencySteps, avoidFor: defaultAvoidSteps}
	f.mu.until = map[string]time.Time{}
	return f
}

// record notes a send's latency (FailureLatency for a failure).
func (f *brokerFaults) record(broker string, latency time.Duration) {
	var d time.Duration
	for i := len(f.latency) - 1; i >= 0; i-- {
		if latency >= f.latency[i] {
			d = f.avoidFor[i]
			break
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d == 0 {
		delete(f.mu.until, broker)
		return
	}
	f.mu.until[broker] = f.now().Add(d)
}

// avoided reports whether broker is to be avoided now.
func (f *brokerFaults) avoided(broker string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.mu.until) == 0 {
		return false
	}
	u, ok := f.mu.until[broker]
	if !ok {
		return false
	}
	if !f.now().Before(u) {
		delete(f.mu.until, broker)
		return false
	}
	return true
}

// any reports whether some broker is being avoided (a fast path: with
// none, the queue list needs no filtering).
func (f *brokerFaults) any() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.until) > 0
}

// filter returns the queues whose broker is neither avoided nor except
// (the broker of a failed attempt, when retrying); all of queues when
// that leaves none.
func (f *brokerFaults) filter(queues []MessageQueue, except string) []MessageQueue {
	if except == "" && !f.any() {
		return queues
	}
	out := make([]MessageQueue, 0, len(queues))
	for _, q := range queues {
		if q.BrokerName != except && !f.avoided(q.BrokerName) {
			out = append(out, q)
		}
	}
	if len(out) == 0 && except != "" {
		for _, q := range queues {
			if q.BrokerName != except {
				out = append(out, q)
			}
		}
	}
	if len(out) == 0 {
		return queues
	}
	return out
}
