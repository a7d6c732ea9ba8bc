package client

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/samsamq/samsa/protocol"
)

// ErrTopicShrink: ApplyTopic was asked for fewer queues than a topic has,
// without Force.
var ErrTopicShrink = errors.New("client: fewer queues than the topic has")

// TopicSpec says what ApplyTopic makes of a topic on each master.
type TopicSpec struct {
	// Queues is the read and write queue count; 0 keeps an existing
	// topic's (an update) and is refused for a new one.
	Queues int
	// Perm is the read/write permission bits: protocol.PermRead,
	// PermWrite or both (RocketMQ's updateTopic -p 4, 2, 6); -1 keeps an
	// existing topic's, read and write for a new one. The other bits of
	// an existing topic's perm are kept.
	Perm int
	// Order marks the topic ordered (a new one; an existing one keeps its
	// mark unless Order is set).
	Order bool
	// Cluster limits the change to one cluster's masters; Brokers to
	// these addresses (named by address). Default: every master.
	Cluster string
	Brokers []string
	// Force allows fewer queues than the topic has: the dropped queues'
	// messages are hidden from consumers (RocketMQ refuses it too).
	Force bool
	// ExistingOnly changes the topic only where it exists (an update);
	// an error when it exists nowhere.
	ExistingOnly bool
}

// TopicChange is what ApplyTopic did on one broker.
type TopicChange struct {
	Broker string
	Addr   string
	// Action is "created", "updated" or "unchanged".
	Action     string
	FromQueues int32
	Queues     int32
	Perm       int32
}

// ApplyTopic creates or updates topic on the masters s selects and
// reports, per broker, what it did. Every broker is checked before any
// is changed: a shrink without Force is refused with nothing changed.
func (a *Admin) ApplyTopic(ctx context.Context, topic string, s TopicSpec) ([]TopicChange, error) {
	if s.Queues < 0 || (s.Queues == 0 && !s.ExistingOnly) {
		return nil, fmt.Errorf("client: topic %s: %d queues: a topic needs at least 1", topic, s.Queues)
	}
	if rw := protocol.PermRead | protocol.PermWrite; s.Perm != -1 && (s.Perm&^rw != 0 || s.Perm&rw == 0) {
		return nil, fmt.Errorf("client: topic %s: perm %d: want read (%d), write (%d) or both (%d)", topic, s.Perm,
			protocol.PermRead, protocol.PermWrite, rw)
	}
	targets := map[string]string{}
	if len(s.Brokers) > 0 {
		for _, addr := range s.Brokers {
			targets[addr] = addr
		}
	} else {
		m, err := a.Masters(ctx, s.Cluster)
		if err != nil {
			return nil, err
		}
		targets = m
	}
	type step struct {
		TopicChange
		order bool
	}
	var plan []step
	for name, addr := range targets {
		old, exists, err := a.TopicConfig(ctx, addr, topic)
		if err != nil {
			return nil, err
		}
		if !exists && s.ExistingOnly {
			continue
		}
		st := step{TopicChange: TopicChange{Broker: name, Addr: addr, Action: "created", Queues: int32(s.Queues),
			Perm: protocol.PermRead | protocol.PermWrite}, order: s.Order}
		if s.Perm >= 0 {
			st.Perm = int32(s.Perm)
		}
		if exists {
			st.FromQueues = max(old.ReadQueueNums, old.WriteQueueNums)
			if s.Queues == 0 {
				st.Queues = st.FromQueues
			}
			if st.Queues < st.FromQueues && !s.Force {
				hidden := fmt.Sprintf("queues %d..%d", st.Queues, st.FromQueues-1)
				if st.Queues == st.FromQueues-1 {
					hidden = fmt.Sprintf("queue %d", st.Queues)
				}
				return nil, fmt.Errorf("%w: topic %s has %d queues on %s; %d would hide %s and their messages",
					ErrTopicShrink, topic, st.FromQueues, name, st.Queues, hidden)
			}
			st.Perm = old.Perm
			if s.Perm >= 0 {
				st.Perm = old.Perm&^(protocol.PermRead|protocol.PermWrite) | int32(s.Perm)
			}
			st.order = old.Order || s.Order
			st.Action = "updated"
			if old.ReadQueueNums == st.Queues && old.WriteQueueNums == st.Queues && old.Perm == st.Perm && old.Order == st.order {
				st.Action = "unchanged"
			}
		}
		plan = append(plan, st)
	}
	if len(plan) == 0 {
		return nil, fmt.Errorf("%w: topic %s exists on none of the selected brokers", ErrNoRoute, topic)
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].Broker < plan[j].Broker })
	out := make([]TopicChange, len(plan))
	for i, st := range plan {
		if st.Action != "unchanged" {
			o := TopicOptions{Queues: int(st.Queues), Perm: int(st.Perm), Order: st.order, Brokers: []string{st.Addr}}
			if err := a.CreateTopic(ctx, topic, o); err != nil {
				return out[:i], err
			}
		}
		out[i] = st.TopicChange
	}
	return out, nil
}
