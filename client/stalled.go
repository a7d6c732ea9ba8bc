package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// StalledProbeTimeout bounds one probe of a stalled broker: how long a
// heartbeat may take before the producer looks at the route again.
const StalledProbeTimeout = 250 * time.Millisecond

// stalledBrokers remembers the broker addresses whose last send timed out
// with nothing heard from them since: a process paused, a host gone
// silent, or a master cut off while a fail-over elects another. Sends
// are not queued behind such an address: the producer first probes it
// and watches the topic's route (sendTarget), so a send goes to the new
// master as soon as the name servers name it, instead of waiting out
// another SendTimeout on the old one. Safe for concurrent use.
type stalledBrokers struct {
	// n mirrors len(m): every send asks, and with nothing stalled (the
	// usual case) it takes no lock.
	n  atomic.Int32
	mu sync.Mutex
	m  map[string]struct{}
}

func (s *stalledBrokers) timedOut(addr string) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]struct{}{}
	}
	s.m[addr] = struct{}{}
	s.n.Store(int32(len(s.m)))
	s.mu.Unlock()
}

// answered clears addr: it answered a request.
func (s *stalledBrokers) answered(addr string) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	delete(s.m, addr)
	s.n.Store(int32(len(s.m)))
	s.mu.Unlock()
}

func (s *stalledBrokers) stalled(addr string) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[addr]
	return ok
}

// noteAnswer records the outcome of a request to addr: err is Invoke's
// (a response of any code is an answer).
func (p *Producer) noteAnswer(addr string, err error) {
	switch {
	case err == nil:
		p.stalls.answered(addr)
	case errors.Is(err, ErrTimeout):
		p.stalls.timedOut(addr)
	}
}

// sendTarget returns the address to send q's message to: the master of
// q's broker in r, unless that address is stalled (its last request timed
// out, nothing heard since). Then, until ctx ends, it probes the address
// with a heartbeat (StalledProbeTimeout each) and looks the route up
// again between probes: it returns the address once it answers, or the
// broker's new master once the route names another one (a fail-over), with
// that route. Nothing has been sent when it returns an error.
func (p *Producer) sendTarget(ctx context.Context, topic string, r *topicRoute, q MessageQueue) (string, *topicRoute, error) {
	addr := r.masterAddr(q.BrokerName)
	if addr == "" || !p.stalls.stalled(addr) {
		return addr, r, nil
	}
	body, err := protocol.MarshalBody(&protocol.HeartbeatData{ClientID: p.in.clientID,
		ProducerDataSet: []protocol.ProducerData{{GroupName: p.opts.Group}}})
	if err != nil {
		return "", r, err
	}
	for {
		p.in.refreshSoon(topic)
		pctx, cancel := context.WithTimeout(ctx, StalledProbeTimeout)
		_, err := p.in.rc.Invoke(pctx, addr, protocol.NewRequest(protocol.HeartBeat, nil, body))
		cancel()
		if err == nil {
			p.stalls.answered(addr)
			return addr, r, nil
		}
		if ctx.Err() != nil {
			return "", r, fmt.Errorf("%w: broker %s at %s has not answered since a send to it timed out, and the route names no other master; the message was not sent",
				ErrTimeout, q.BrokerName, addr)
		}
		if nr, rerr := p.in.route(ctx, topic); rerr == nil {
			if a := nr.masterAddr(q.BrokerName); a != "" && a != addr {
				return a, nr, nil
			}
		}
		if !errors.Is(err, ErrTimeout) {
			// Refused or reset: not paused but gone. Sleep out the rest
			// of the probe's time before asking the route again.
			t := time.NewTimer(StalledProbeTimeout)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}
