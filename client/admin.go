package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// Admin inspects and changes a cluster: topics, routes, brokers, group
// offsets, broker stats. It is what the samsa CLI's client commands use.
// Safe for concurrent use.
type Admin struct {
	opts ClientOptions
	in   *instance
}

// NewAdmin returns an Admin talking to opts.NameServers.
func NewAdmin(opts ClientOptions) (*Admin, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("client: admin options: %w", err)
	}
	return &Admin{opts: opts, in: newInstance(opts, nil)}, nil
}

// Close closes the connections.
func (a *Admin) Close() error {
	a.in.close()
	return nil
}

// TopicOptions say how CreateTopic makes a topic.
type TopicOptions struct {
	// Queues is the read and write queue count per broker (default 8).
	Queues int
	// Perm is the permission bits (default read and write:
	// protocol.PermRead|protocol.PermWrite).
	Perm int
	// Order marks the topic ordered.
	Order bool
	// Cluster limits creation to one cluster's brokers (default all).
	Cluster string
	// Brokers limits creation to these broker addresses (default every
	// master of the cluster(s)).
	Brokers []string
}

// CreateTopic creates (or updates) topic on every master broker selected
// by o, and waits until the name servers route it (up to the context's
// deadline; brokers register a change at once).
func (a *Admin) CreateTopic(ctx context.Context, topic string, o TopicOptions) error {
	if o.Queues <= 0 {
		o.Queues = 8
	}
	if o.Perm == 0 {
		o.Perm = protocol.PermRead | protocol.PermWrite
	}
	addrs := o.Brokers
	if len(addrs) == 0 {
		ci, err := a.ClusterInfo(ctx)
		if err != nil {
			return err
		}
		for cluster, names := range ci.ClusterAddrTable {
			if o.Cluster != "" && cluster != o.Cluster {
				continue
			}
			for _, n := range names {
				if m := ci.BrokerAddrTable[n].BrokerAddrs[protocol.MasterID]; m != "" {
					addrs = append(addrs, m)
				}
			}
		}
		if len(addrs) == 0 {
			return fmt.Errorf("%w: no master broker in cluster %q", ErrNoRoute, o.Cluster)
		}
	}
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: int32(o.Queues),
		WriteQueueNums: int32(o.Queues), Perm: int32(o.Perm), TopicFilterType: protocol.TopicFilterSingleTag, Order: o.Order}
	for _, addr := range addrs {
		cctx, cancel := a.in.ctxTimeout(ctx)
		_, err := a.in.invoke(cctx, addr, protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil))
		cancel()
		if err != nil {
			return fmt.Errorf("client: create topic %s on %s: %w", topic, addr, err)
		}
	}
	// Wait for the route to name every broker written to.
	wctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	for {
		d, err := a.Route(wctx, topic)
		if err == nil && routeCovers(d, addrs) {
			return nil
		}
		select {
		case <-wctx.Done():
			if err == nil {
				err = errors.New("route incomplete")
			}
			return fmt.Errorf("client: topic %s created, not yet routed: %w", topic, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func routeCovers(d *protocol.TopicRouteData, addrs []string) bool {
	have := map[string]bool{}
	names := map[string]bool{}
	for _, q := range d.QueueDatas {
		names[q.BrokerName] = true
	}
	for _, b := range d.BrokerDatas {
		if names[b.BrokerName] {
			for _, a := range b.BrokerAddrs {
				have[a] = true
			}
		}
	}
	for _, a := range addrs {
		if !have[a] {
			return false
		}
	}
	return true
}

// Route returns topic's route as the name servers hold it; ErrNoRoute
// when they know no such topic.
func (a *Admin) Route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	h := protocol.GetRouteInfoRequestHeader{Topic: topic}
	resp, err := a.in.invokeNameServer(ctx, protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
	if err != nil {
		if errors.Is(err, ErrTopicNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoRoute, topic)
		}
		return nil, err
	}
	var d protocol.TopicRouteData
	if err := protocol.UnmarshalBody(resp.Body, &d); err != nil {
		return nil, fmt.Errorf("client: route of %s: %w", topic, err)
	}
	return &d, nil
}

// Topics lists every topic the name servers know, sorted.
func (a *Admin) Topics(ctx context.Context) ([]string, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	resp, err := a.in.invokeNameServer(ctx, protocol.NewRequest(protocol.GetAllTopicListFromNameServer, nil, nil))
	if err != nil {
		return nil, err
	}
	var tl protocol.TopicList
	if err := protocol.UnmarshalBody(resp.Body, &tl); err != nil {
		return nil, fmt.Errorf("client: topic list: %w", err)
	}
	sort.Strings(tl.TopicList)
	return tl.TopicList, nil
}

// ClusterInfo returns the clusters and their brokers' addresses.
func (a *Admin) ClusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	ci, _, err := a.ClusterInfoFrom(ctx)
	return ci, err
}

// ClusterInfoFrom is ClusterInfo, and says which name server answered:
// name servers that have not heard from the same brokers answer
// differently, and a view of the cluster should say whose it is.
func (a *Admin) ClusterInfoFrom(ctx context.Context) (*protocol.ClusterInfo, string, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	resp, from, err := a.in.invokeNameServerFrom(ctx, protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil))
	if err != nil {
		return nil, "", err
	}
	var ci protocol.ClusterInfo
	if err := protocol.UnmarshalBody(resp.Body, &ci); err != nil {
		return nil, "", fmt.Errorf("client: cluster info from %s: %w", from, err)
	}
	return &ci, from, nil
}

// QueueStatus is one queue's offsets, and a group's progress in it.
type QueueStatus struct {
	Queue     MessageQueue
	MinOffset int64
	MaxOffset int64
	// Committed is the group's committed offset, -1 if none.
	Committed int64
	// Lag is MaxOffset - Committed (MaxOffset - MinOffset with none).
	Lag int64
}

// TopicStatus returns every readable queue of topic with its offsets;
// with a group, also the group's committed offsets and lag.
func (a *Admin) TopicStatus(ctx context.Context, topic, group string) ([]QueueStatus, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	a.in.refreshRoute(ctx, topic)
	r, err := a.in.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make([]QueueStatus, 0, len(r.read))
	for _, q := range r.read {
		s := QueueStatus{Queue: q, Committed: -1}
		if s.MinOffset, err = a.in.minOffset(ctx, q); err != nil {
			return nil, err
		}
		if s.MaxOffset, err = a.in.maxOffset(ctx, q); err != nil {
			return nil, err
		}
		s.Lag = s.MaxOffset - s.MinOffset
		if group != "" {
			off, err := a.in.queryConsumerOffset(ctx, group, q)
			switch {
			case err == nil:
				s.Committed = off
				s.Lag = max(s.MaxOffset-off, 0)
			case !errors.Is(err, ErrNoOffset):
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// GroupTopics returns the topics in which group has committed an offset
// on some queue (by asking about every topic: for small clusters and the
// CLI). System topics (RMQ_SYS_, TBW102, the broker and cluster names)
// are skipped; the retry topic %RETRY%group is included.
func (a *Admin) GroupTopics(ctx context.Context, group string) ([]string, error) {
	topics, err := a.Topics(ctx)
	if err != nil {
		return nil, err
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	skip := map[string]bool{"TBW102": true, "SELF_TEST_TOPIC": true, "OFFSET_MOVED_EVENT": true, "SCHEDULE_TOPIC_XXXX": true}
	for n := range ci.BrokerAddrTable {
		skip[n] = true
	}
	for c := range ci.ClusterAddrTable {
		skip[c] = true
	}
	var out []string
	for _, t := range topics {
		if skip[t] || strings.HasPrefix(t, "RMQ_SYS_") || (strings.HasPrefix(t, "%RETRY%") && t != "%RETRY%"+group) || strings.HasPrefix(t, "%DLQ%") {
			continue
		}
		st, err := a.TopicStatus(ctx, t, group)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(st, func(s QueueStatus) bool { return s.Committed >= 0 }) {
			out = append(out, t)
		}
	}
	return out, nil
}

// BrokerStats asks a broker for its text stats (the "stats" command on
// the broker port) and returns the name/value pairs in order. An item
// ("ha", "store", "topics") asks for that group of lines only.
func (a *Admin) BrokerStats(ctx context.Context, addr string, item ...string) ([]protocol.Stat, error) {
	cmd := "stats\r\n"
	if len(item) > 0 && item[0] != "" {
		if strings.ContainsAny(item[0], " \t\r\n") {
			return nil, fmt.Errorf("client: stats item %q: one word", item[0])
		}
		cmd = "stats " + item[0] + "\r\n"
	}
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConnection, addr, err)
	}
	if t := a.in.opts.TLS; t != nil { // the text protocol shares the remoting port and its TLS
		if nc, err = netx.ClientHandshake(nc, addr, t, a.in.opts.DialTimeout); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConnection, addr, err)
		}
	}
	defer func() { _ = nc.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl) // a failure shows as the exchange's error
	}
	br := bufio.NewReader(nc)
	if cr := a.opts.Credentials; cr.AccessKey != "" {
		// A broker with ACL on wants an admin account on its text port.
		if _, err := fmt.Fprintf(nc, "auth %s %s\r\n", cr.AccessKey, cr.SecretKey); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConnection, addr, err)
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConnection, addr, err)
		}
		if strings.TrimSpace(line) != "OK" {
			return nil, fmt.Errorf("client: stats of %s: %s", addr, strings.TrimSpace(line))
		}
	}
	if _, err := nc.Write([]byte(cmd)); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConnection, addr, err)
	}
	stats, err := protocol.ReadStats(br)
	if err != nil {
		return nil, fmt.Errorf("client: stats of %s: %w", addr, err)
	}
	return stats, nil
}
