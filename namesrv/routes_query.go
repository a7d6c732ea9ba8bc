package namesrv

import (
	"slices"

	"github.com/samsamq/samsa/protocol"
)

// UnregisterBroker removes one broker address (RouteInfoManager.unRegisterBroker):
// its liveness, its place in its group and, when the group is left empty,
// the group, its cluster entry and its topics' queue data.
func (t *RouteTable) UnregisterBroker(h protocol.UnregisterBrokerRequestHeader) {
	key := brokerKey{h.ClusterName, h.BrokerAddr}
	delete(t.live, key)
	delete(t.filterServers, key)

	bd := t.brokers[h.BrokerName]
	if bd == nil {
		return
	}
	for id, addr := range bd.BrokerAddrs {
		if addr == h.BrokerAddr {
			delete(bd.BrokerAddrs, id)
		}
	}
	if len(bd.BrokerAddrs) > 0 {
		if bd.EnableActingMaster && minID(bd.BrokerAddrs) > protocol.MasterID {
			t.wipeWritePerm(h.BrokerName) // no master left: read-only until one returns
		}
		return
	}
	delete(t.brokers, h.BrokerName)
	if names := t.clusters[h.ClusterName]; names != nil {
		delete(names, h.BrokerName)
		if len(names) == 0 {
			delete(t.clusters, h.ClusterName)
		}
	}
	for topic, qds := range t.topics {
		delete(qds, h.BrokerName)
		if len(qds) == 0 {
			t.dropTopic(topic)
		}
	}
}

func (t *RouteTable) wipeWritePerm(brokerName string) {
	for _, qds := range t.topics {
		if qd, ok := qds[brokerName]; ok {
			qd.Perm &^= protocol.PermWrite
			qds[brokerName] = qd
		}
	}
}

// Route is a topic's route (RouteInfoManager.pickupTopicRouteData); false
// when no broker serves the topic. Lists are sorted by broker name.
func (t *RouteTable) Route(topic string) (protocol.TopicRouteData, bool) {
	qds := t.topics[topic]
	if len(qds) == 0 {
		return protocol.TopicRouteData{}, false
	}
	rd := protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	for _, name := range sortedKeys(qds) {
		rd.QueueDatas = append(rd.QueueDatas, qds[name])
		bd := t.brokers[name]
		if bd == nil {
			continue
		}
		c := bd.Clone()
		rd.BrokerDatas = append(rd.BrokerDatas, c)
		for _, addr := range c.BrokerAddrs {
			if fs, ok := t.filterServers[brokerKey{c.Cluster, addr}]; ok {
				rd.FilterServerTable[addr] = slices.Clone(fs)
			}
		}
	}
	if len(rd.BrokerDatas) == 0 {
		return protocol.TopicRouteData{}, false
	}
	return rd, true
}

// ClusterInfo is every broker group and every cluster's group names.
func (t *RouteTable) ClusterInfo() protocol.ClusterInfo {
	ci := protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]protocol.BrokerData, len(t.brokers)),
		ClusterAddrTable: make(map[string][]string, len(t.clusters)),
	}
	for name, bd := range t.brokers {
		ci.BrokerAddrTable[name] = bd.Clone()
	}
	for cluster, names := range t.clusters {
		ci.ClusterAddrTable[cluster] = sortedKeys(names)
	}
	return ci
}

// Topics lists every topic some broker serves, sorted.
func (t *RouteTable) Topics() []string { return sortedKeys(t.topics) }

// DeleteTopic drops a topic's queue data: everywhere, or in one cluster's
// broker groups when cluster is not "".
func (t *RouteTable) DeleteTopic(topic, cluster string) {
	if cluster == "" {
		t.dropTopic(topic)
		return
	}
	qds := t.topics[topic]
	for name := range t.clusters[cluster] {
		delete(qds, name)
	}
	if len(qds) == 0 {
		t.dropTopic(topic)
	}
}

// Touch refreshes a broker's liveness (BROKER_HEARTBEAT, QUERY_DATA_VERSION);
// false when the broker is not registered.
func (t *RouteTable) Touch(cluster, addr string) bool {
	li := t.live[brokerKey{cluster, addr}]
	if li == nil {
		return false
	}
	li.lastUpdate = t.clock.Now()
	return true
}

// DataVersion is the topic-table version the table holds for a broker.
func (t *RouteTable) DataVersion(cluster, addr string) (protocol.DataVersion, bool) {
	li := t.live[brokerKey{cluster, addr}]
	if li == nil {
		return protocol.DataVersion{}, false
	}
	return li.dataVersion, true
}

// DataVersionChanged reports whether dv differs from what the table holds
// for the broker (true for an unknown broker): it should register again.
func (t *RouteTable) DataVersionChanged(cluster, addr string, dv protocol.DataVersion) bool {
	return t.dataVersionChanged(brokerKey{cluster, addr}, dv)
}

// ScanNotActive removes every broker silent for longer than its expiry and
// returns what it removed. The Server calls it every ScanInterval.
func (t *RouteTable) ScanNotActive() []protocol.UnregisterBrokerRequestHeader {
	now := t.clock.Now()
	var gone []brokerKey
	for key, li := range t.live {
		if now.After(li.lastUpdate.Add(li.timeout)) {
			gone = append(gone, key)
		}
	}
	return t.unregisterKeys(gone)
}

// ConnClosed removes the brokers whose latest registration came through
// conn, and returns them.
func (t *RouteTable) ConnClosed(conn ConnID) []protocol.UnregisterBrokerRequestHeader {
	if conn == 0 {
		return nil
	}
	var gone []brokerKey
	for key, li := range t.live {
		if li.conn == conn {
			gone = append(gone, key)
		}
	}
	return t.unregisterKeys(gone)
}

// unregisterKeys finds each key's broker name and id and unregisters it.
func (t *RouteTable) unregisterKeys(keys []brokerKey) []protocol.UnregisterBrokerRequestHeader {
	slices.SortFunc(keys, func(a, b brokerKey) int {
		if a.cluster != b.cluster {
			if a.cluster < b.cluster {
				return -1
			}
			return 1
		}
		if a.addr < b.addr {
			return -1
		} else if a.addr > b.addr {
			return 1
		}
		return 0
	})
	var out []protocol.UnregisterBrokerRequestHeader
	for _, key := range keys {
		h := protocol.UnregisterBrokerRequestHeader{ClusterName: key.cluster, BrokerAddr: key.addr}
		found := false
		for _, name := range sortedKeys(t.brokers) {
			bd := t.brokers[name]
			if bd.Cluster != key.cluster {
				continue
			}
			for id, addr := range bd.BrokerAddrs {
				if addr == key.addr {
					h.BrokerName, h.BrokerID, found = name, id, true
					break
				}
			}
			if found {
				break
			}
		}
		if !found { // liveness without a group entry: just forget it
			delete(t.live, key)
			delete(t.filterServers, key)
			continue
		}
		t.UnregisterBroker(h)
		out = append(out, h)
	}
	return out
}

// LiveBrokers is how many broker addresses are registered and alive.
func (t *RouteTable) LiveBrokers() int { return len(t.live) }
