package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// LastStoreTimes returns, for every queue of topic on its masters, when
// its last message was stored (the zero time when it has none), from
// GET_TOPIC_STATS_INFO.
func (a *Admin) LastStoreTimes(ctx context.Context, topic string) (map[MessageQueue]time.Time, error) {
	r, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[MessageQueue]time.Time{}
	for _, bd := range r.BrokerDatas {
		addr := bd.BrokerAddrs[protocol.MasterID]
		if addr == "" {
			continue
		}
		cctx, cancel := a.in.ctxTimeout(ctx)
		resp, err := a.in.invoke(cctx, addr, protocol.NewRequest(protocol.GetTopicStatsInfo, map[string]string{"topic": topic}, nil))
		cancel()
		if errors.Is(err, ErrTopicNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("client: topic stats of %s on %s: %w", topic, bd.BrokerName, err)
		}
		var t protocol.TopicStatsTable
		if err := t.Decode(resp.Body); err != nil {
			return nil, fmt.Errorf("client: topic stats of %s on %s: %w", topic, bd.BrokerName, err)
		}
		for q, o := range t.OffsetTable {
			var ts time.Time
			if o.LastUpdateTimestamp > 0 {
				ts = time.UnixMilli(o.LastUpdateTimestamp)
			}
			out[MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: int(q.QueueID)}] = ts
		}
	}
	return out, nil
}

// Member is one online member of a consumer group, as a broker sees it.
type Member struct {
	ClientID string `json:"clientId"`
	Addr     string `json:"addr"`
	Language string `json:"language"`
	// Version is the client's RocketMQ version code.
	Version int `json:"version"`
	// Brokers are the masters the member is connected to.
	Brokers []string `json:"brokers"`
	// Model is the group's message model as the broker learned it from
	// heartbeats: CLUSTERING or BROADCASTING.
	Model string `json:"messageModel"`
}

// GroupConnections returns group's online members (merged over every
// master, by client id) and the group's subscriptions, from
// GET_CONSUMER_CONNECTION_LIST; no members when none is online.
func (a *Admin) GroupConnections(ctx context.Context, group string) ([]Member, map[string]string, error) {
	masters, err := a.Masters(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]*Member{}
	subs := map[string]string{}
	for name, addr := range masters {
		cctx, cancel := a.in.ctxTimeout(ctx)
		resp, err := a.in.invoke(cctx, addr, protocol.NewRequest(protocol.GetConsumerConnectionList,
			map[string]string{"consumerGroup": group}, nil))
		cancel()
		var re *ResponseError
		if errors.As(err, &re) && re.Code == protocol.ConsumerNotOnline {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("client: members of %s on %s: %w", group, name, err)
		}
		var cc protocol.ConsumerConnection
		if err := protocol.UnmarshalBody(resp.Body, &cc); err != nil {
			return nil, nil, fmt.Errorf("client: members of %s on %s: %w", group, name, err)
		}
		for _, c := range cc.ConnectionSet {
			m := byID[c.ClientID]
			if m == nil {
				m = &Member{ClientID: c.ClientID, Addr: c.ClientAddr, Language: c.Language, Version: c.Version, Model: cc.MessageModel}
				byID[c.ClientID] = m
			}
			m.Brokers = append(m.Brokers, name)
		}
		for t, s := range cc.SubscriptionTable {
			subs[t] = s.SubString
		}
	}
	out := make([]Member, 0, len(byID))
	for _, m := range byID {
		sort.Strings(m.Brokers)
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out, subs, nil
}

// BrokerConfig returns the running configuration of the broker at addr
// (GET_BROKER_CONFIG) as key=value pairs in its order; secret values come
// masked.
func (a *Admin) BrokerConfig(ctx context.Context, addr string) ([][2]string, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	resp, err := a.in.invoke(ctx, addr, protocol.NewRequest(protocol.GetBrokerConfig, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("client: configuration of %s: %w", addr, err)
	}
	var out [][2]string
	for _, l := range strings.Split(string(resp.Body), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// BrokerRuntimeInfo returns the run-time figures of the broker at addr
// (GET_BROKER_RUNTIME_INFO's KVTable).
func (a *Admin) BrokerRuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	resp, err := a.in.invoke(ctx, addr, protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("client: runtime info of %s: %w", addr, err)
	}
	var kv protocol.KVTable
	if err := protocol.UnmarshalBody(resp.Body, &kv); err != nil {
		return nil, fmt.Errorf("client: runtime info of %s: %w", addr, err)
	}
	return kv.Table, nil
}

// ConsumeProgress is one queue of a group's progress (GET_CONSUME_STATS).
type ConsumeProgress struct {
	// BrokerOffset is the queue's max offset; ConsumerOffset the group's
	// committed offset (0 when none).
	BrokerOffset, ConsumerOffset int64
	// LastConsumed is the store time of the last message the group
	// consumed (zero: none).
	LastConsumed time.Time
	// For a group consuming by POP (ConsumerOffset is then the lowest
	// offset not acknowledged): messages handed out and not acknowledged,
	// and how many were handed out again since the broker started.
	InFlight, Redelivered int64
}

// ConsumeStats returns group's progress on topic ("" for every topic it
// has offsets on) from every master.
func (a *Admin) ConsumeStats(ctx context.Context, group, topic string) (map[MessageQueue]ConsumeProgress, error) {
	masters, err := a.Masters(ctx, "")
	if err != nil {
		return nil, err
	}
	out := map[MessageQueue]ConsumeProgress{}
	ext := map[string]string{"consumerGroup": group}
	if topic != "" {
		ext["topic"] = topic
	}
	for name, addr := range masters {
		cctx, cancel := a.in.ctxTimeout(ctx)
		resp, err := a.in.invoke(cctx, addr, protocol.NewRequest(protocol.GetConsumeStats, ext, nil))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("client: consume stats of %s on %s: %w", group, name, err)
		}
		var cs protocol.ConsumeStats
		if err := cs.Decode(resp.Body); err != nil {
			return nil, fmt.Errorf("client: consume stats of %s on %s: %w", group, name, err)
		}
		for q, w := range cs.OffsetTable {
			p := ConsumeProgress{BrokerOffset: w.BrokerOffset, ConsumerOffset: w.ConsumerOffset, InFlight: w.PopInFlight,
				Redelivered: w.PopRedelivered}
			if w.LastTimestamp > 0 {
				p.LastConsumed = time.UnixMilli(w.LastTimestamp)
			}
			out[MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: int(q.QueueID)}] = p
		}
	}
	return out, nil
}
