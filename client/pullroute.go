package client

import (
	"context"
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// Which broker of a group a queue is pulled from. Every pull answer
// carries suggestWhichBrokerId: the master (0) normally; with the
// broker's slaveReadEnable, a slave when the consumer reads far behind
// the tail (RocketMQ's PullAPIWrapper.updatePullFromWhichNode). The next
// pull of the queue goes to the suggested broker when the route has it,
// else to the master, else, with the master gone from the route, to the
// lowest-numbered slave, which serves pulls from its copy of the log.

// pullAddr returns where q's next pull goes, and whether that is a slave
// (a slave ignores a pull's commit flag).
func (in *instance) pullAddr(ctx context.Context, q MessageQueue) (addr string, slave bool, err error) {
	if a, s := in.pickPullAddr(q); a != "" {
		return a, s, nil
	}
	// Unknown broker: the topic's route names it.
	if _, err := in.route(ctx, q.Topic); err != nil {
		return "", false, err
	}
	if a, s := in.pickPullAddr(q); a != "" {
		return a, s, nil
	}
	return "", false, fmt.Errorf("%w: broker %s of %v has no address", ErrNoRoute, q.BrokerName, q)
}

func (in *instance) pickPullAddr(q MessageQueue) (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	b, ok := in.mu.brokers[q.BrokerName]
	if !ok {
		return "", false
	}
	if id, ok := in.mu.pullFrom[q]; ok {
		if a := b.BrokerAddrs[id]; a != "" {
			return a, id != protocol.MasterID
		}
	}
	a := pickAddr(b, true)
	return a, a != "" && a != b.BrokerAddrs[protocol.MasterID]
}

// notePullFrom records the broker id a pull answer of q suggested.
func (in *instance) notePullFrom(q MessageQueue, id int64) {
	in.mu.Lock()
	if id == protocol.MasterID || id < 0 {
		delete(in.mu.pullFrom, q)
	} else {
		in.mu.pullFrom[q] = id
	}
	in.mu.Unlock()
}
