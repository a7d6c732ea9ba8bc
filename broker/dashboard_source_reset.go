package broker

import (
	"fmt"

	"github.com/samsamq/samsa/broker/dashboard"
	"github.com/samsamq/samsa/broker/offsets"
	"github.com/samsamq/samsa/protocol"
)

// ResetOffsets moves a group's committed offsets on this broker, as samsa
// group reset-offsets does for each master. It refuses on a slave
// (offsets are the master's) and, unless a dry run, for a group with
// members online (their clients would write their own offsets back:
// RocketMQ pushes the reset to them, which Samsa's client does not obey).
// Every queue is checked before any moves.
func (s dashboardSource) ResetOffsets(req dashboard.ResetRequest) (dashboard.ResetAnswer, error) {
	b := s.b
	if err := ValidateGroup(req.Group); err != nil {
		return dashboard.ResetAnswer{}, dashboard.Invalid("group: %v", err)
	}
	if b.repl.isSlave() {
		return dashboard.ResetAnswer{}, dashboard.Conflict("this broker is a slave: its offsets are its master's; reset them on the master %s", b.repl.MasterAddr())
	}
	tc, ok := b.topics.get(req.Topic)
	if !ok {
		return dashboard.ResetAnswer{}, dashboard.NotFound("topic %q does not exist on this broker", req.Topic)
	}
	if ids := b.clients.consumerIDs(req.Group); len(ids) > 0 && !req.DryRun {
		return dashboard.ResetAnswer{}, dashboard.Conflict(
			"group %s has %d member(s) online: stop its consumers, then reset (a running member would write its own offsets back)", req.Group, len(ids))
	}
	ans := dashboard.ResetAnswer{Group: req.Group, Topic: req.Topic, DryRun: req.DryRun}
	for q := range int32(tc.ReadQueueNums) {
		lo, hi := max(b.store.MinQueueOffset(req.Topic, q), 0), max(b.store.MaxQueueOffset(req.Topic, q), 0)
		m := dashboard.ResetMove{Queue: q, From: -1}
		switch req.To {
		case "earliest":
			m.To = lo
		case "latest":
			m.To = hi
		case "time":
			m.To = offsets.ByTime(b.store, req.Topic, q, req.TimestampMs, false)
		case "offset":
			m.To = min(max(req.Offset, lo), hi)
		default:
			return dashboard.ResetAnswer{}, dashboard.Invalid("to: want earliest, latest, time or offset, got %q", req.To)
		}
		if off, ok := b.offsets.Query(req.Group, req.Topic, q); ok {
			m.From = off
		}
		ans.Queues = append(ans.Queues, m)
	}
	if req.DryRun {
		return ans, nil
	}
	for _, m := range ans.Queues {
		if code, remark := b.offReq.checkOffsetCommit(req.Group, req.Topic, m.Queue, m.To); code != protocol.Success {
			return dashboard.ResetAnswer{}, dashboard.Invalid("queue %d: %s", m.Queue, remark)
		}
	}
	for _, m := range ans.Queues {
		if err := b.offsets.Commit(req.Group, req.Topic, m.Queue, m.To); err != nil {
			return dashboard.ResetAnswer{}, fmt.Errorf("queue %d: %w", m.Queue, err)
		}
	}
	b.log.Info("broker: offsets reset from the dashboard", "group", req.Group, "topic", req.Topic, "to", req.To)
	return ans, nil
}
