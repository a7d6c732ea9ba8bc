package namesrv

import (
	"slices"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// Clock gives the time; tests inject a fake one.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// DefaultBrokerExpiry is how long a broker may stay silent before it is
// dropped (RocketMQ's DEFAULT_BROKER_CHANNEL_EXPIRED_TIME).
const DefaultBrokerExpiry = 120 * time.Second

// ConnID names the connection a broker registered through, so its
// registration can go when the connection does. 0 is "no connection".
type ConnID uint64

type brokerKey struct{ cluster, addr string }

type liveInfo struct {
	lastUpdate   time.Time
	timeout      time.Duration
	dataVersion  protocol.DataVersion
	haServerAddr string
	conn         ConnID
}

// RouteTable is the name server's state. It is not safe for concurrent use:
// the Server serializes access.
type RouteTable struct {
	clock  Clock
	expiry time.Duration

	clusters      map[string]map[string]struct{}           // cluster → broker names
	brokers       map[string]*protocol.BrokerData          // broker name → group
	topics        map[string]map[string]protocol.QueueData // topic → broker name → queues
	live          map[brokerKey]*liveInfo                  // liveness by (cluster, addr)
	filterServers map[brokerKey][]string                   // filter servers by broker
	kv            map[string]map[string]string             // namespace → key → value
	kvBytes       map[string]int                           // namespace → JSON bytes of its pairs (kvEntryLen)
	kvTotal       int                                      // sum of kvBytes
	// topicListBytes is the JSON the topic list takes (jsonLen of every
	// key of topics), kept as topics come and go so that a registration's
	// check (CheckRegistration) costs what it carries, not the table.
	topicListBytes int
}

// NewRouteTable makes an empty table. A nil clock is the system clock;
// expiry <= 0 is DefaultBrokerExpiry (a registration may ask for its own).
func NewRouteTable(clock Clock, expiry time.Duration) *RouteTable {
	if clock == nil {
		clock = SystemClock{}
	}
	if expiry <= 0 {
		expiry = DefaultBrokerExpiry
	}
	return &RouteTable{
		clock:         clock,
		expiry:        expiry,
		clusters:      map[string]map[string]struct{}{},
		brokers:       map[string]*protocol.BrokerData{},
		topics:        map[string]map[string]protocol.QueueData{},
		live:          map[brokerKey]*liveInfo{},
		filterServers: map[brokerKey][]string{},
		kv:            map[string]map[string]string{},
		kvBytes:       map[string]int{},
	}
}

// Registration is one REGISTER_BROKER.
type Registration struct {
	Header   protocol.RegisterBrokerRequestHeader
	Body     protocol.RegisterBrokerBody
	ZoneName string // the "zoneName" ext field, if any
	Conn     ConnID
}

// RegisterResult is what the name server tells a registering broker.
type RegisterResult struct {
	HAServerAddr string // a slave's master's HA address
	MasterAddr   string // a slave's master's address
	Ignored      bool   // lost to a registration with a newer state version
	New          bool   // the address was not registered (alive) before
}

// RegisterBroker records a broker's registration (RouteInfoManager.registerBroker).
// One deliberate difference: RocketMQ refuses a first registration that
// carries exactly one topic (it takes it for a single-topic update racing
// the full one; a Java broker always has several system topics). A Samsa
// broker may well start with one topic, so it is accepted.
func (t *RouteTable) RegisterBroker(r Registration) RegisterResult {
	h := &r.Header
	tcs := &r.Body.TopicConfigSerializeWrapper
	var res RegisterResult

	names := t.clusters[h.ClusterName]
	if names == nil {
		names = map[string]struct{}{}
		t.clusters[h.ClusterName] = names
	}
	names[h.BrokerName] = struct{}{}

	registerFirst := false
	bd := t.brokers[h.BrokerName]
	if bd == nil {
		registerFirst = true
		bd = &protocol.BrokerData{Cluster: h.ClusterName, BrokerName: h.BrokerName, BrokerAddrs: map[int64]string{}}
		t.brokers[h.BrokerName] = bd
	}
	bd.EnableActingMaster = h.EnableActingMaster
	bd.ZoneName = r.ZoneName

	// One address holds one id: a slave turned master leaves its old id.
	for id, addr := range bd.BrokerAddrs {
		if addr == h.BrokerAddr && id != h.BrokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	// Another address under the same id with a newer state wins.
	if old, ok := bd.BrokerAddrs[h.BrokerID]; ok && old != h.BrokerAddr {
		if li := t.live[brokerKey{h.ClusterName, old}]; li != nil && li.dataVersion.StateVersion > tcs.DataVersion.StateVersion {
			delete(t.live, brokerKey{h.ClusterName, h.BrokerAddr})
			res.Ignored = true
			return res
		}
	}
	old := bd.BrokerAddrs[h.BrokerID]
	bd.BrokerAddrs[h.BrokerID] = h.BrokerAddr
	registerFirst = registerFirst || old == ""

	key := brokerKey{h.ClusterName, h.BrokerAddr}
	isMaster := h.BrokerID == protocol.MasterID
	isPrimeSlave := !isMaster && h.EnableActingMaster && h.BrokerID == minID(bd.BrokerAddrs)
	if isMaster || isPrimeSlave {
		versionChanged := t.dataVersionChanged(key, tcs.DataVersion)
		for _, name := range sortedKeys(tcs.TopicConfigTable) {
			tc := tcs.TopicConfigTable[name]
			if tc.TopicName == "" {
				tc.TopicName = name
			}
			if isPrimeSlave {
				tc.Perm &^= protocol.PermWrite
			}
			if !registerFirst && !versionChanged && t.sameQueueData(h.BrokerName, tc) {
				continue
			}
			t.updateQueueData(h.BrokerName, tc)
		}
	}

	_, seen := t.live[key]
	res.New = !seen
	timeout := t.expiry
	if h.HeartbeatTimeoutMillis > 0 {
		timeout = time.Duration(h.HeartbeatTimeoutMillis) * time.Millisecond
	}
	t.live[key] = &liveInfo{
		lastUpdate:   t.clock.Now(),
		timeout:      timeout,
		dataVersion:  tcs.DataVersion,
		haServerAddr: h.HAServerAddr,
		conn:         r.Conn,
	}
	if len(r.Body.FilterServerList) == 0 {
		delete(t.filterServers, key)
	} else {
		t.filterServers[key] = slices.Clone(r.Body.FilterServerList)
	}

	if !isMaster {
		if master, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			if li := t.live[brokerKey{h.ClusterName, master}]; li != nil {
				res.HAServerAddr = li.haServerAddr
				res.MasterAddr = master
			}
		}
	}
	return res
}

func (t *RouteTable) dataVersionChanged(key brokerKey, dv protocol.DataVersion) bool {
	li := t.live[key]
	return li == nil || li.dataVersion != dv
}

// sameQueueData reports whether the table already holds tc's queue data
// for the broker. RocketMQ skips a topic it holds at all when the data
// version did not change; comparing the data as well lets a full
// registration split in chunks under one data version (every chunk after
// the first carries the same version) still update a changed topic.
func (t *RouteTable) sameQueueData(brokerName string, tc protocol.TopicConfig) bool {
	qd, ok := t.topics[tc.TopicName][brokerName]
	return ok && qd == queueData(brokerName, tc)
}

func queueData(brokerName string, tc protocol.TopicConfig) protocol.QueueData {
	return protocol.QueueData{
		BrokerName:     brokerName,
		ReadQueueNums:  tc.ReadQueueNums,
		WriteQueueNums: tc.WriteQueueNums,
		Perm:           tc.Perm,
		TopicSysFlag:   tc.TopicSysFlag,
	}
}

func (t *RouteTable) updateQueueData(brokerName string, tc protocol.TopicConfig) {
	qds := t.topics[tc.TopicName]
	if qds == nil {
		qds = map[string]protocol.QueueData{}
		t.topics[tc.TopicName] = qds
		t.topicListBytes += jsonLen(tc.TopicName)
	}
	qds[brokerName] = queueData(brokerName, tc)
}

// dropTopic removes a topic's every queue data.
func (t *RouteTable) dropTopic(topic string) {
	if _, ok := t.topics[topic]; ok {
		delete(t.topics, topic)
		t.topicListBytes -= jsonLen(topic)
	}
}

func minID(addrs map[int64]string) int64 {
	first := true
	var m int64
	for id := range addrs {
		if first || id < m {
			m, first = id, false
		}
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
