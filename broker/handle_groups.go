package broker

import (
	"strconv"

	"github.com/samsamq/samsa/protocol"
)

// handleUpdateAndCreateGroup answers UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// (200): the body is a SubscriptionGroupConfig (fields it lacks take
// RocketMQ's defaults). A slave refuses it.
func (b *Broker) handleUpdateAndCreateGroup(_ *conn, req *protocol.Command) *protocol.Command {
	if r := b.repl.refuseMetadataOnSlave(req); r != nil {
		return r
	}
	var g protocol.SubscriptionGroupConfig
	if err := protocol.UnmarshalBody(req.Body, &g); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "bad subscription group body: "+err.Error())
	}
	if err := ValidateGroup(g.GroupName); err != nil {
		return protocol.NewResponse(req, protocol.InvalidParameter, "bad subscription group name: "+err.Error())
	}
	if err := b.groups.update(g); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	b.log.Info("broker: subscription group created or updated", "group", g.GroupName,
		"brokerId", g.BrokerID, "whichBrokerWhenConsumeSlowly", g.WhichBrokerWhenConsumeSlowly)
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleGetAllGroups answers GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): the
// table as a SubscriptionGroupWrapper (what a slave copies).
func (b *Broker) handleGetAllGroups(_ *conn, req *protocol.Command) *protocol.Command {
	table, v := b.groups.snapshot()
	return b.ans.body(req, protocol.SubscriptionGroupWrapper{SubscriptionGroupTable: table,
		DataVersion: protocol.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}})
}

// handleDeleteGroup answers DELETE_SUBSCRIPTIONGROUP (207): the group's
// config goes, and with cleanOffset its offsets on every topic. A slave
// refuses it.
func (b *Broker) handleDeleteGroup(_ *conn, req *protocol.Command) *protocol.Command {
	if r := b.repl.refuseMetadataOnSlave(req); r != nil {
		return r
	}
	group := req.Ext("groupName")
	if group == "" {
		return protocol.NewResponse(req, protocol.InvalidParameter, "groupName is required")
	}
	if _, err := b.groups.remove(group); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	}
	if clean, _ := strconv.ParseBool(req.Ext("cleanOffset")); clean {
		b.offsets.RemoveGroup(group)
	}
	return protocol.NewResponse(req, protocol.Success, "")
}
