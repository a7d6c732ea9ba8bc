package broker

import (
	"sort"

	"github.com/samsamq/samsa/protocol"
)

// handleGetConsumerConnectionList answers GET_CONSUMER_CONNECTION_LIST
// (203): a group's online members (client id, address, language,
// version) and subscriptions; CONSUMER_NOT_ONLINE when it has none.
func (a *mqadminRequests) handleGetConsumerConnectionList(_ *conn, req *protocol.Command) *protocol.Command {
	group := req.Ext("consumerGroup")
	cc, ok := a.clients.connections(group)
	if !ok {
		return protocol.NewResponse(req, protocol.ConsumerNotOnline, "the consumer group["+group+"] not online")
	}
	return a.ans.body(req, cc)
}

// connections is group's ConsumerConnection; false when no member is
// online.
func (m *clientManager) connections(group string) (protocol.ConsumerConnection, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.mu.consumers[group]
	if g == nil || len(g.channels) == 0 {
		return protocol.ConsumerConnection{}, false
	}
	cc := protocol.ConsumerConnection{ConsumeType: g.consumeType, MessageModel: g.messageModel, ConsumeFromWhere: g.fromWhere,
		SubscriptionTable: make(map[string]protocol.SubscriptionData, len(g.subs))}
	for p, ci := range g.channels {
		cc.ConnectionSet = append(cc.ConnectionSet, protocol.Connection{ClientID: ci.clientID, ClientAddr: p.remote(),
			Language: ci.language, Version: ci.version})
	}
	sort.Slice(cc.ConnectionSet, func(i, j int) bool { return cc.ConnectionSet[i].ClientID < cc.ConnectionSet[j].ClientID })
	for t, s := range g.subs {
		exp := s.ExpType
		if exp == "" {
			exp = protocol.ExpressionTag
		}
		cc.SubscriptionTable[t] = protocol.SubscriptionData{Topic: t, SubString: s.SubString, SubVersion: s.SubVersion, ExpressionType: exp}
	}
	return cc, true
}
