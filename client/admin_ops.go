package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// Masters returns the master address of every broker group of cluster
// (every cluster when ""), by broker name.
func (a *Admin) Masters(ctx context.Context, cluster string) (map[string]string, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for c, names := range ci.ClusterAddrTable {
		if cluster != "" && c != cluster {
			continue
		}
		for _, n := range names {
			if m := ci.BrokerAddrTable[n].BrokerAddrs[protocol.MasterID]; m != "" {
				out[n] = m
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no master broker in cluster %q", ErrNoRoute, cluster)
	}
	return out, nil
}

// TopicConfigs returns the topic table of the broker at addr
// (GET_ALL_TOPIC_CONFIG).
func (a *Admin) TopicConfigs(ctx context.Context, addr string) (map[string]protocol.TopicConfig, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	resp, err := a.in.invoke(ctx, addr, protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("client: topic configs of %s: %w", addr, err)
	}
	var w protocol.TopicConfigSerializeWrapper
	if err := protocol.UnmarshalBody(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("client: topic configs of %s: %w", addr, err)
	}
	return w.TopicConfigTable, nil
}

// DeleteTopic deletes topic as RocketMQ's mqadmin deleteTopic does: from
// every master of cluster (all clusters when "") that has it
// (DELETE_TOPIC_IN_BROKER), then from every name server
// (DELETE_TOPIC_IN_NAMESRV). It returns the broker names it deleted the
// topic on; none and ErrNoRoute when no master has the topic.
func (a *Admin) DeleteTopic(ctx context.Context, topic, cluster string) ([]string, error) {
	masters, err := a.Masters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for name, addr := range masters {
		_, found, err := a.TopicConfig(ctx, addr, topic)
		if err != nil {
			return done, err
		}
		if !found {
			continue
		}
		h := protocol.DeleteTopicRequestHeader{Topic: topic}
		cctx, cancel := a.in.ctxTimeout(ctx)
		_, err = a.in.invoke(cctx, addr, protocol.NewRequest(protocol.DeleteTopicInBroker, h.Encode(), nil))
		cancel()
		if err != nil {
			return done, fmt.Errorf("client: delete topic %s on %s (%s): %w", topic, name, addr, err)
		}
		done = append(done, name)
	}
	sort.Strings(done)
	h := protocol.DeleteTopicRequestHeader{Topic: topic, ClusterName: cluster}
	for _, ns := range a.opts.NameServers {
		cctx, cancel := a.in.ctxTimeout(ctx)
		_, err := a.in.invoke(cctx, ns, protocol.NewRequest(protocol.DeleteTopicInNamesrv, h.Encode(), nil))
		cancel()
		if err != nil {
			return done, fmt.Errorf("client: delete topic %s on name server %s: %w", topic, ns, err)
		}
	}
	if len(done) == 0 {
		return nil, fmt.Errorf("%w: no master has topic %s", ErrNoRoute, topic)
	}
	return done, nil
}

// Groups returns the subscription groups of every master of cluster
// (every cluster when ""), by group name and then broker name.
func (a *Admin) Groups(ctx context.Context, cluster string) (map[string]map[string]protocol.SubscriptionGroupConfig, error) {
	masters, err := a.Masters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]protocol.SubscriptionGroupConfig{}
	for name, addr := range masters {
		cctx, cancel := a.in.ctxTimeout(ctx)
		resp, err := a.in.invoke(cctx, addr, protocol.NewRequest(protocol.GetAllSubscriptionGroupConfig, nil, nil))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("client: groups of %s (%s): %w", name, addr, err)
		}
		var w protocol.SubscriptionGroupWrapper
		if err := protocol.UnmarshalBody(resp.Body, &w); err != nil {
			return nil, fmt.Errorf("client: groups of %s (%s): %w", name, addr, err)
		}
		for g, c := range w.SubscriptionGroupTable {
			if out[g] == nil {
				out[g] = map[string]protocol.SubscriptionGroupConfig{}
			}
			out[g][name] = c
		}
	}
	return out, nil
}

// DeleteGroup deletes group's subscription config, and with cleanOffsets
// its committed offsets, on every master of cluster
// (DELETE_SUBSCRIPTIONGROUP). It returns the broker names it asked.
func (a *Admin) DeleteGroup(ctx context.Context, group, cluster string, cleanOffsets bool) ([]string, error) {
	masters, err := a.Masters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for name, addr := range masters {
		req := protocol.NewRequest(protocol.DeleteSubscriptionGroup,
			map[string]string{"groupName": group, "cleanOffset": strconv.FormatBool(cleanOffsets)}, nil)
		cctx, cancel := a.in.ctxTimeout(ctx)
		_, err := a.in.invoke(cctx, addr, req)
		cancel()
		if err != nil {
			return done, fmt.Errorf("client: delete group %s on %s (%s): %w", group, name, addr, err)
		}
		done = append(done, name)
	}
	sort.Strings(done)
	return done, nil
}

// GroupMembers returns the client ids of group's online members as the
// masters see them (GET_CONSUMER_LIST_BY_GROUP), sorted, without repeats.
func (a *Admin) GroupMembers(ctx context.Context, group string) ([]string, error) {
	masters, err := a.Masters(ctx, "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for name, addr := range masters {
		h := protocol.GetConsumerListByGroupRequestHeader{ConsumerGroup: group}
		cctx, cancel := a.in.ctxTimeout(ctx)
		resp, err := a.in.invoke(cctx, addr, protocol.NewRequest(protocol.GetConsumerListByGroup, h.Encode(), nil))
		cancel()
		if err != nil {
			var re *ResponseError
			if errors.As(err, &re) && re.Code == protocol.SystemError {
				continue // no member of the group on this broker
			}
			return nil, fmt.Errorf("client: members of %s on %s: %w", group, name, err)
		}
		var body protocol.GetConsumerListByGroupResponseBody
		if err := protocol.UnmarshalBody(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("client: members of %s on %s: %w", group, name, err)
		}
		for _, id := range body.ConsumerIDList {
			seen[id] = true
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// OffsetReset is one queue's move by ResetOffsets.
type OffsetReset struct {
	Queue MessageQueue
	// From is the committed offset before (-1: none).
	From int64
	// To is the new offset.
	To int64
}

// ResetTarget says where ResetOffsets moves a group: exactly one of
// Earliest, Latest, a non-zero Time, or Offset >= 0.
type ResetTarget struct {
	Earliest, Latest bool
	Time             time.Time
	// Offset is taken when >= 0 (clamped into each queue's [min, max]).
	Offset int64
}

// ResetOffsets moves group's committed offsets on every queue of topic to
// target (with dryRun, only says where they would go). The group must
// have no online member: a running consumer would overwrite the new
// offsets with its own on its next commit (Kafka's rule; RocketMQ's live
// reset through the clients is not supported).
func (a *Admin) ResetOffsets(ctx context.Context, group, topic string, target ResetTarget, dryRun bool) ([]OffsetReset, error) {
	members, err := a.GroupMembers(ctx, group)
	if err != nil {
		return nil, err
	}
	if len(members) > 0 {
		return nil, fmt.Errorf("client: group %s has %d online member(s) (%v): stop its consumers first; resetting a running group is not supported",
			group, len(members), members)
	}
	st, err := a.TopicStatus(ctx, topic, group)
	if err != nil {
		return nil, err
	}
	out := make([]OffsetReset, 0, len(st))
	for _, s := range st {
		r := OffsetReset{Queue: s.Queue, From: s.Committed}
		switch {
		case target.Earliest:
			r.To = s.MinOffset
		case target.Latest:
			r.To = s.MaxOffset
		case !target.Time.IsZero():
			if r.To, err = a.in.searchOffset(ctx, s.Queue, target.Time); err != nil {
				return nil, err
			}
		case target.Offset >= 0:
			r.To = min(max(target.Offset, s.MinOffset), s.MaxOffset)
		default:
			return nil, errors.New("client: reset offsets: no target")
		}
		out = append(out, r)
	}
	if dryRun {
		return out, nil
	}
	for _, r := range out {
		if err := a.in.updateConsumerOffset(ctx, group, r.Queue, r.To); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TopicConfig returns one topic's config on the broker at addr
// (GET_TOPIC_CONFIG); found is false when the broker has no such topic.
// A broker that does not know the request (RocketMQ 4) is asked for its
// whole table instead (GET_ALL_TOPIC_CONFIG).
func (a *Admin) TopicConfig(ctx context.Context, addr, topic string) (tc protocol.TopicConfig, found bool, err error) {
	cctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	req := protocol.NewRequest(protocol.GetTopicConfig, map[string]string{"topic": topic}, nil)
	resp, err := a.in.invoke(cctx, addr, req)
	var re *ResponseError
	switch {
	case errors.As(err, &re) && re.Code == protocol.TopicNotExist:
		return tc, false, nil
	case errors.As(err, &re) && re.Code == protocol.RequestCodeNotSupported:
		tcs, err := a.TopicConfigs(ctx, addr)
		if err != nil {
			return tc, false, err
		}
		tc, found = tcs[topic]
		return tc, found, nil
	case err != nil:
		return tc, false, fmt.Errorf("client: topic config of %s on %s: %w", topic, addr, err)
	}
	if err := protocol.UnmarshalBody(resp.Body, &tc); err != nil {
		return tc, false, fmt.Errorf("client: topic config of %s on %s: %w", topic, addr, err)
	}
	return tc, true, nil
}
