package protocol

import "encoding/json"

// MasterID is the broker id of a master; slaves have 1, 2, ...
const MasterID = 0

// TopicRouteData answers GET_ROUTEINFO_BY_TOPIC: which broker groups hold
// the topic's queues, and their addresses.
type TopicRouteData struct {
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"` // "brokerName:queues;..." for ordered topics
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// MarshalJSON keeps the arrays and the map non-null: rocketmq-client-go
// slices brokerAddrs' text and wants lists to be lists.
func (t TopicRouteData) MarshalJSON() ([]byte, error) {
	type plain TopicRouteData
	if t.QueueDatas == nil {
		t.QueueDatas = []QueueData{}
	}
	if t.BrokerDatas == nil {
		t.BrokerDatas = []BrokerData{}
	}
	if t.FilterServerTable == nil {
		t.FilterServerTable = map[string][]string{}
	}
	return json.Marshal(plain(t))
}

// QueueData is one broker group's share of a topic.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"` // Perm* bits
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData is one broker group: its name, cluster and addresses by broker
// id (MasterID for the master).
type BrokerData struct {
	Cluster            string           `json:"cluster"`
	BrokerName         string           `json:"brokerName"`
	BrokerAddrs        map[int64]string `json:"brokerAddrs"`
	ZoneName           string           `json:"zoneName,omitempty"`
	EnableActingMaster bool             `json:"enableActingMaster"`
}

// MarshalJSON writes brokerAddrs as {} rather than null when empty: the Go
// client cuts the first and last character of that text unconditionally.
func (b BrokerData) MarshalJSON() ([]byte, error) {
	type plain BrokerData
	if b.BrokerAddrs == nil {
		b.BrokerAddrs = map[int64]string{}
	}
	return json.Marshal(plain(b))
}

// MasterAddr is the master's address, "" when the group has none.
func (b *BrokerData) MasterAddr() string { return b.BrokerAddrs[MasterID] }

// Clone copies b, map included.
func (b *BrokerData) Clone() BrokerData {
	c := *b
	c.BrokerAddrs = make(map[int64]string, len(b.BrokerAddrs))
	for id, a := range b.BrokerAddrs {
		c.BrokerAddrs[id] = a
	}
	return c
}

// ClusterInfo answers GET_BROKER_CLUSTER_INFO.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`  // by broker name
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"` // cluster → broker names
}

// MarshalJSON writes empty tables as {}.
func (c ClusterInfo) MarshalJSON() ([]byte, error) {
	type plain ClusterInfo
	if c.BrokerAddrTable == nil {
		c.BrokerAddrTable = map[string]BrokerData{}
	}
	if c.ClusterAddrTable == nil {
		c.ClusterAddrTable = map[string][]string{}
	}
	return json.Marshal(plain(c))
}

// TopicList answers GET_ALL_TOPIC_LIST_FROM_NAMESERVER (and the broker's
// topic-list requests).
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// MarshalJSON writes an empty list as [].
func (t TopicList) MarshalJSON() ([]byte, error) {
	type plain TopicList
	if t.TopicList == nil {
		t.TopicList = []string{}
	}
	return json.Marshal(plain(t))
}
