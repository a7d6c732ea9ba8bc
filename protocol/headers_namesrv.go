package protocol

import "hash/crc32"

// GetRouteInfoRequestHeader is GET_ROUTEINFO_BY_TOPIC's header.
type GetRouteInfoRequestHeader struct {
	Topic                  string // required
	AcceptStandardJSONOnly bool   // ask for quoted map keys (we always send them)
}

func (h *GetRouteInfoRequestHeader) Encode() map[string]string {
	w := newFields(2)
	w.str("topic", h.Topic)
	if h.AcceptStandardJSONOnly {
		w.boolean("acceptStandardJsonOnly", true)
	}
	return w
}

func (h *GetRouteInfoRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.reqStr("topic")
	h.AcceptStandardJSONOnly = r.boolean("acceptStandardJsonOnly")
	return r.err()
}

// RegisterBrokerRequestHeader is REGISTER_BROKER's header; the body is a
// RegisterBrokerBody.
type RegisterBrokerRequestHeader struct {
	BrokerName             string // required
	BrokerAddr             string // required; host:port clients connect to
	ClusterName            string // required
	HAServerAddr           string // required; host:port slaves replicate from
	BrokerID               int64  // required; 0 is the master
	HeartbeatTimeoutMillis int64  // expiry for this broker; 0: the name server's default
	EnableActingMaster     bool
	Compressed             bool  // body is RocketMQ's deflated layout, not JSON
	BodyCrc32              int32 // CRC32 of the body; 0: not checked
	// Incremental (Samsa's "samsaIncremental", ignored by RocketMQ's name
	// servers): the body holds only the topics changed since the broker's
	// last registration with this name server, under its new data version
	// (RocketMQ's registerIncrementBrokerData). A Samsa name server that
	// does not know the broker refuses it (remark RegisterInFullRemark), so
	// the broker registers in full.
	Incremental bool
}

// RegisterInFullRemark is a Samsa name server's remark refusing an
// incremental registration from a broker it does not hold.
const RegisterInFullRemark = "incremental registration from a broker not registered here: register in full"

func (h *RegisterBrokerRequestHeader) Encode() map[string]string {
	w := newFields(10)
	w.str("brokerName", h.BrokerName)
	w.str("brokerAddr", h.BrokerAddr)
	w.str("clusterName", h.ClusterName)
	w.str("haServerAddr", h.HAServerAddr)
	w.i64("brokerId", h.BrokerID)
	if h.HeartbeatTimeoutMillis > 0 {
		w.i64("heartbeatTimeoutMillis", h.HeartbeatTimeoutMillis)
	}
	w.boolean("enableActingMaster", h.EnableActingMaster)
	w.boolean("compressed", h.Compressed)
	w.i32("bodyCrc32", h.BodyCrc32)
	if h.Incremental {
		w.boolean("samsaIncremental", true)
	}
	return w
}

func (h *RegisterBrokerRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.BrokerName = r.reqStr("brokerName")
	h.BrokerAddr = r.reqStr("brokerAddr")
	h.ClusterName = r.reqStr("clusterName")
	h.HAServerAddr = r.reqStr("haServerAddr")
	h.BrokerID = r.i64("brokerId", true)
	h.HeartbeatTimeoutMillis = r.i64("heartbeatTimeoutMillis", false)
	h.EnableActingMaster = r.boolean("enableActingMaster")
	h.Compressed = r.boolean("compressed")
	h.BodyCrc32 = r.i32("bodyCrc32", false)
	h.Incremental = r.boolean("samsaIncremental")
	return r.err()
}

// RegisterBrokerResponseHeader answers REGISTER_BROKER: a slave learns its
// master's addresses.
type RegisterBrokerResponseHeader struct {
	HAServerAddr string
	MasterAddr   string
}

func (h *RegisterBrokerResponseHeader) Encode() map[string]string {
	w := newFields(2)
	w.optStr("haServerAddr", h.HAServerAddr)
	w.optStr("masterAddr", h.MasterAddr)
	return w
}

func (h *RegisterBrokerResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.HAServerAddr = r.str("haServerAddr")
	h.MasterAddr = r.str("masterAddr")
	return r.err()
}

// UnregisterBrokerRequestHeader is UNREGISTER_BROKER's header.
type UnregisterBrokerRequestHeader struct {
	BrokerName  string // required
	BrokerAddr  string // required
	ClusterName string // required
	BrokerID    int64  // required
}

func (h *UnregisterBrokerRequestHeader) Encode() map[string]string {
	w := newFields(4)
	w.str("brokerName", h.BrokerName)
	w.str("brokerAddr", h.BrokerAddr)
	w.str("clusterName", h.ClusterName)
	w.i64("brokerId", h.BrokerID)
	return w
}

func (h *UnregisterBrokerRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.BrokerName = r.reqStr("brokerName")
	h.BrokerAddr = r.reqStr("brokerAddr")
	h.ClusterName = r.reqStr("clusterName")
	h.BrokerID = r.i64("brokerId", true)
	return r.err()
}

// NamespaceOrderTopicConfig is the KV namespace of ordered topics' configs
// (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG), the one Java clients ask for.
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// KVConfigRequestHeader is the header of GET_KV_CONFIG and DELETE_KV_CONFIG.
type KVConfigRequestHeader struct {
	Namespace string // required
	Key       string // required
}

func (h *KVConfigRequestHeader) Encode() map[string]string {
	w := newFields(2)
	w.str("namespace", h.Namespace)
	w.str("key", h.Key)
	return w
}

func (h *KVConfigRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Namespace = r.reqStr("namespace")
	h.Key = r.reqStr("key")
	return r.err()
}

// The per-request names of the KV request header.
type (
	GetKVConfigRequestHeader    = KVConfigRequestHeader
	DeleteKVConfigRequestHeader = KVConfigRequestHeader
)

// PutKVConfigRequestHeader is PUT_KV_CONFIG's header.
type PutKVConfigRequestHeader struct {
	Namespace string // required
	Key       string // required
	Value     string // required
}

func (h *PutKVConfigRequestHeader) Encode() map[string]string {
	w := newFields(3)
	w.str("namespace", h.Namespace)
	w.str("key", h.Key)
	w.str("value", h.Value)
	return w
}

func (h *PutKVConfigRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Namespace = r.reqStr("namespace")
	h.Key = r.reqStr("key")
	h.Value = r.reqStr("value")
	return r.err()
}

// GetKVConfigResponseHeader answers GET_KV_CONFIG with SUCCESS.
type GetKVConfigResponseHeader struct {
	Value string
}

func (h *GetKVConfigResponseHeader) Encode() map[string]string {
	w := newFields(1)
	w.optStr("value", h.Value)
	return w
}

func (h *GetKVConfigResponseHeader) Decode(m map[string]string) error {
	h.Value = m["value"]
	return nil
}

// TopicRequestHeader is a header of just a topic: DELETE_TOPIC_IN_BROKER,
// DELETE_TOPIC_IN_NAMESRV (with an optional cluster), GET_TOPIC_CONFIG.
type TopicRequestHeader struct {
	Topic       string // required
	ClusterName string
}

func (h *TopicRequestHeader) Encode() map[string]string {
	w := newFields(2)
	w.str("topic", h.Topic)
	w.optStr("clusterName", h.ClusterName)
	return w
}

func (h *TopicRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.Topic = r.reqStr("topic")
	h.ClusterName = r.str("clusterName")
	return r.err()
}

// DeleteTopicRequestHeader is the header of the delete-topic requests.
type DeleteTopicRequestHeader = TopicRequestHeader

// BodyCRC32 is RocketMQ's UtilAll.crc32 of a body: CRC-32 (IEEE) with the
// sign bit cleared, as RegisterBrokerRequestHeader.BodyCrc32 carries it.
func BodyCRC32(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

// QueryDataVersionRequestHeader is QUERY_DATA_VERSION's header: a broker asks
// whether the name server holds its current topic table (body: its
// DataVersion). The answer also refreshes the broker's liveness.
type QueryDataVersionRequestHeader struct {
	BrokerName  string // required
	BrokerAddr  string // required
	ClusterName string // required
	BrokerID    int64  // required
}

func (h *QueryDataVersionRequestHeader) Encode() map[string]string {
	w := newFields(4)
	w.str("brokerName", h.BrokerName)
	w.str("brokerAddr", h.BrokerAddr)
	w.str("clusterName", h.ClusterName)
	w.i64("brokerId", h.BrokerID)
	return w
}

func (h *QueryDataVersionRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.BrokerName = r.reqStr("brokerName")
	h.BrokerAddr = r.reqStr("brokerAddr")
	h.ClusterName = r.reqStr("clusterName")
	h.BrokerID = r.i64("brokerId", true)
	return r.err()
}

// QueryDataVersionResponseHeader answers QUERY_DATA_VERSION (body: the name
// server's DataVersion of that broker, when it has one).
type QueryDataVersionResponseHeader struct {
	Changed bool // required; the broker should register again
}

func (h *QueryDataVersionResponseHeader) Encode() map[string]string {
	w := newFields(1)
	w.boolean("changed", h.Changed)
	return w
}

func (h *QueryDataVersionResponseHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	if !r.has("changed") {
		r.fail("changed", "missing")
	}
	h.Changed = r.boolean("changed")
	return r.err()
}

// BrokerHeartbeatRequestHeader is BROKER_HEARTBEAT's header: a lightweight
// liveness refresh between full registrations.
type BrokerHeartbeatRequestHeader struct {
	ClusterName string // required
	BrokerAddr  string // required
	BrokerName  string // required
	BrokerID    int64
}

func (h *BrokerHeartbeatRequestHeader) Encode() map[string]string {
	w := newFields(4)
	w.str("clusterName", h.ClusterName)
	w.str("brokerAddr", h.BrokerAddr)
	w.str("brokerName", h.BrokerName)
	w.i64("brokerId", h.BrokerID)
	return w
}

func (h *BrokerHeartbeatRequestHeader) Decode(m map[string]string) error {
	r := fieldReader{m: m}
	h.ClusterName = r.reqStr("clusterName")
	h.BrokerAddr = r.reqStr("brokerAddr")
	h.BrokerName = r.reqStr("brokerName")
	h.BrokerID = r.i64("brokerId", false)
	return r.err()
}
