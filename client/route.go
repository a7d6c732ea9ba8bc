package client

import (
	"github.com/samsamq/samsa/protocol"
)

// topicRoute is one topic's route as the client uses it: the queues it
// may write and read, sorted, and the brokers' addresses. Immutable once
// built: a refresh that finds a change builds a new one (merge keeps the
// old queue slices when they did not change, so balancers' caches hold).
type topicRoute struct {
	topic   string
	write   []MessageQueue // writable queues of brokers with a master
	read    []MessageQueue // readable queues
	brokers map[string]protocol.BrokerData
	order   string // OrderTopicConf, when the topic is ordered
	auto    bool   // made by autoRoute: kept until the real route appears
}

// AutoCreateTopicKey is the topic whose route names the brokers that
// create topics on first use (RocketMQ's TBW102).
const AutoCreateTopicKey = "TBW102"

func newTopicRoute(topic string, d *protocol.TopicRouteData) *topicRoute {
	r := &topicRoute{topic: topic, brokers: map[string]protocol.BrokerData{}, order: d.OrderTopicConf}
	for _, b := range d.BrokerDatas {
		r.brokers[b.BrokerName] = b.Clone()
	}
	for _, q := range d.QueueDatas {
		b, ok := r.brokers[q.BrokerName]
		if !ok {
			continue
		}
		if q.Perm&protocol.PermWrite != 0 && b.BrokerAddrs[protocol.MasterID] != "" {
			for i := 0; i < int(q.WriteQueueNums); i++ {
				r.write = append(r.write, MessageQueue{Topic: topic, BrokerName: q.BrokerName, QueueID: i})
			}
		}
		if q.Perm&protocol.PermRead != 0 && pickAddr(b, true) != "" {
			for i := 0; i < int(q.ReadQueueNums); i++ {
				r.read = append(r.read, MessageQueue{Topic: topic, BrokerName: q.BrokerName, QueueID: i})
			}
		}
	}
	SortQueues(r.write)
	SortQueues(r.read)
	return r
}

// merge returns n, with the queue slices of r where they are unchanged.
func (r *topicRoute) merge(n *topicRoute) *topicRoute {
	if sameQueues(r.write, n.write) {
		n.write = r.write
	}
	if sameQueues(r.read, n.read) {
		n.read = r.read
	}
	return n
}

// masterAddr returns the master address of broker, "" if none.
func (r *topicRoute) masterAddr(broker string) string {
	return r.brokers[broker].BrokerAddrs[protocol.MasterID]
}

// readAddr returns where to read broker's queues: the master, else a slave.
func (r *topicRoute) readAddr(broker string) string {
	b, ok := r.brokers[broker]
	if !ok {
		return ""
	}
	return pickAddr(b, true)
}
