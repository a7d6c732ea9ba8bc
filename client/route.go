package client

import (
	"context"
	"errors"
	"fmt"

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

// route returns topic's route from the cache, fetching it the first time.
func (in *instance) route(ctx context.Context, topic string) (*topicRoute, error) {
	in.mu.Lock()
	e := in.mu.routes[topic]
	if e == nil {
		e = &routeEntry{ready: make(chan struct{})}
		in.mu.routes[topic] = e
		in.mu.Unlock()
		r, err := in.fetchRoute(ctx, topic)
		in.mu.Lock()
		if err != nil {
			delete(in.mu.routes, topic) // the next caller tries again
			e.err = err
		} else {
			e.route = r
		}
		in.mu.Unlock()
		close(e.ready)
		return r, err
	}
	in.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, ctxErr(ctx, "route of "+topic)
	}
	in.mu.Lock()
	r, err := e.route, e.err
	in.mu.Unlock()
	return r, err
}

// refreshRoute fetches topic's route again and, if it changed, replaces
// the cached one. A route that vanished (no topic) is dropped.
func (in *instance) refreshRoute(ctx context.Context, topic string) {
	r, err := in.fetchRoute(ctx, topic)
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.mu.routes[topic]
	if e == nil || e.route == nil {
		return
	}
	if err != nil {
		if errors.Is(err, ErrNoRoute) && !e.route.auto {
			e.route = &topicRoute{topic: topic}
		}
		in.opts.Logger.Debug("client: route refresh failed", "topic", topic, "err", err)
		return
	}
	e.route = e.route.merge(r)
}

// autoRoute caches, for a topic the name servers do not know, a route
// through the brokers that auto-create topics (those of TBW102's route),
// with up to queues queues on each: RocketMQ's producers do the same. The
// first send creates the topic; a refresh then finds its real route.
func (in *instance) autoRoute(ctx context.Context, topic string, queues int) (*topicRoute, error) {
	def, err := in.fetchRoute(ctx, AutoCreateTopicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %s, and no auto-create route (%s): %w", ErrNoRoute, topic, AutoCreateTopicKey, err)
	}
	r := &topicRoute{topic: topic, brokers: def.brokers, auto: true}
	counts := map[string]int{}
	for _, q := range def.write {
		counts[q.BrokerName]++
	}
	for b, n := range counts {
		for i := 0; i < min(n, queues); i++ {
			r.write = append(r.write, MessageQueue{Topic: topic, BrokerName: b, QueueID: i})
		}
	}
	SortQueues(r.write)
	if len(r.write) == 0 {
		return nil, fmt.Errorf("%w: %s: no broker auto-creates topics", ErrNoRoute, topic)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if e := in.mu.routes[topic]; e != nil && e.route != nil && !e.route.auto {
		return e.route, nil // found meanwhile
	}
	e := &routeEntry{ready: make(chan struct{}), route: r}
	close(e.ready)
	in.mu.routes[topic] = e
	return r, nil
}

// refreshRoutes refreshes every cached route (the RouteRefresh loop).
func (in *instance) refreshRoutes(ctx context.Context) {
	in.mu.Lock()
	topics := make([]string, 0, len(in.mu.routes))
	for t, e := range in.mu.routes {
		if e.route != nil {
			topics = append(topics, t)
		}
	}
	in.mu.Unlock()
	for _, t := range topics {
		if ctx.Err() != nil {
			return
		}
		rctx, cancel := in.ctxTimeout(ctx)
		in.refreshRoute(rctx, t)
		cancel()
	}
}

// fetchRoute asks the name servers for topic's route.
func (in *instance) fetchRoute(ctx context.Context, topic string) (*topicRoute, error) {
	ctx, cancel := in.ctxTimeout(ctx)
	defer cancel()
	h := protocol.GetRouteInfoRequestHeader{Topic: topic}
	resp, err := in.invokeNameServer(ctx, protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
	if err != nil {
		if errors.Is(err, ErrTopicNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNoRoute, topic, err)
		}
		return nil, err
	}
	var data protocol.TopicRouteData
	if err := protocol.UnmarshalBody(resp.Body, &data); err != nil {
		return nil, fmt.Errorf("client: route of %s: %w", topic, err)
	}
	r := newTopicRoute(topic, &data)
	in.mu.Lock()
	for _, b := range data.BrokerDatas {
		in.mu.brokers[b.BrokerName] = b.Clone()
	}
	in.mu.Unlock()
	return r, nil
}
