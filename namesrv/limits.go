package namesrv

import (
	"errors"
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// Bounds on what clients may put into the name server, chosen so that every
// answer built from it fits a frame (protocol.DefaultMaxFrame, 16 MiB) with
// room to spare: an answer too large for a frame is never read by its
// client, and a broker whose registration answer is dropped loses every
// route.
//
//   - KV store: one namespace's table is the body of
//     GET_KVLIST_BY_NAMESPACE and, for ORDER_TOPIC_CONFIG, of every
//     REGISTER_BROKER answer; its JSON is kept under MaxKVNamespaceBytes
//     (4 MiB). A value is also a GET_KV_CONFIG answer header and part of a
//     topic's route (orderTopicConf).
//   - Registrations: GET_BROKER_CLUSTER_INFO lists every broker group with
//     its addresses, a topic's route lists every group holding it with its
//     filter servers, and GET_ALL_TOPIC_LIST_FROM_NAMESERVER lists every
//     topic. Names and addresses are bounded in length, groups and
//     addresses in number, and the topic list in JSON bytes, so each of
//     these answers stays under about 15 MiB. A registration past a bound
//     is refused whole: nothing of it is recorded, but a broker already
//     registered is kept alive with the state it had, so a refusal never
//     makes its routes vanish.
const (
	MaxKVNamespaceLen   = 255      // bytes of a namespace name
	MaxKVKeyLen         = 1 << 10  // bytes of a key
	MaxKVValueLen       = 64 << 10 // bytes of a value
	MaxKVNamespaces     = 256      // namespaces in the store
	MaxKVNamespaceBytes = 4 << 20  // JSON bytes of one namespace's table
	MaxKVTotalBytes     = 32 << 20 // JSON bytes of the whole store (memory)

	MaxNameLen        = 255      // bytes of a cluster, broker or topic name, an address, a filter server
	MaxBrokerGroups   = 1024     // broker names
	MaxBrokerAddrs    = 8        // addresses (ids) under one broker name
	MaxFilterServers  = 8        // filter servers of one broker
	MaxTopicListBytes = 15 << 20 // JSON bytes of the topic list: 1.2 million topics of 10 characters
)

// ErrLimit is a request refused because it would take the name server past
// one of its bounds.
var ErrLimit = errors.New("namesrv: limit")

// jsonLen bounds the bytes s takes as a JSON string with its quotes and a
// separator: a byte that might be escaped counts as six.
func jsonLen(s string) int {
	n := 3
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			n += 6
		} else {
			n++
		}
	}
	return n
}

// kvEntryLen is what one key-value pair adds to its namespace's JSON.
func kvEntryLen(key, value string) int { return jsonLen(key) + jsonLen(value) }

// CheckRegistration reports (wrapping ErrLimit) whether r would take the
// table past a bound; RegisterBroker is then not to be called.
func (t *RouteTable) CheckRegistration(r Registration) error {
	h := &r.Header
	for _, f := range []struct{ what, v string }{
		{"cluster name", h.ClusterName}, {"broker name", h.BrokerName},
		{"broker address", h.BrokerAddr}, {"HA server address", h.HAServerAddr}, {"zone name", r.ZoneName},
	} {
		if len(f.v) > MaxNameLen {
			return fmt.Errorf("%w: %s of %d bytes (at most %d)", ErrLimit, f.what, len(f.v), MaxNameLen)
		}
	}
	if len(r.Body.FilterServerList) > MaxFilterServers {
		return fmt.Errorf("%w: %d filter servers (at most %d)", ErrLimit, len(r.Body.FilterServerList), MaxFilterServers)
	}
	for _, fs := range r.Body.FilterServerList {
		if len(fs) > MaxNameLen {
			return fmt.Errorf("%w: filter server address of %d bytes (at most %d)", ErrLimit, len(fs), MaxNameLen)
		}
	}
	bd := t.brokers[h.BrokerName]
	if bd == nil && len(t.brokers) >= MaxBrokerGroups {
		return fmt.Errorf("%w: %d broker groups registered (at most %d)", ErrLimit, len(t.brokers), MaxBrokerGroups)
	}
	if bd != nil {
		if _, ok := bd.BrokerAddrs[h.BrokerID]; !ok && len(bd.BrokerAddrs) >= MaxBrokerAddrs {
			return fmt.Errorf("%w: broker %s has %d addresses (at most %d)", ErrLimit, h.BrokerName, len(bd.BrokerAddrs), MaxBrokerAddrs)
		}
	}
	added := 0
	for name, tc := range r.Body.TopicConfigSerializeWrapper.TopicConfigTable {
		if tc.TopicName != "" {
			name = tc.TopicName
		}
		if len(name) > MaxNameLen {
			return fmt.Errorf("%w: topic name of %d bytes (at most %d)", ErrLimit, len(name), MaxNameLen)
		}
		if _, ok := t.topics[name]; !ok {
			added += jsonLen(name)
		}
	}
	if added == 0 {
		return nil
	}
	total := t.topicListBytes + added
	if total > MaxTopicListBytes {
		return fmt.Errorf("%w: the topic list would take %d bytes (at most %d)", ErrLimit, total, MaxTopicListBytes)
	}
	return nil
}

// checkKV reports (wrapping ErrLimit) whether putting key=value into
// namespace would take the store past a bound.
func (t *RouteTable) checkKV(namespace, key, value string) error {
	switch {
	case namespace == "" || key == "":
		return fmt.Errorf("%w: empty namespace or key", ErrLimit)
	case len(namespace) > MaxKVNamespaceLen:
		return fmt.Errorf("%w: namespace of %d bytes (at most %d)", ErrLimit, len(namespace), MaxKVNamespaceLen)
	case len(key) > MaxKVKeyLen:
		return fmt.Errorf("%w: key of %d bytes (at most %d)", ErrLimit, len(key), MaxKVKeyLen)
	case len(value) > MaxKVValueLen:
		return fmt.Errorf("%w: value of %d bytes (at most %d)", ErrLimit, len(value), MaxKVValueLen)
	}
	ns, ok := t.kv[namespace]
	if !ok && len(t.kv) >= MaxKVNamespaces {
		return fmt.Errorf("%w: %d namespaces (at most %d)", ErrLimit, len(t.kv), MaxKVNamespaces)
	}
	grow := kvEntryLen(key, value)
	if old, ok := ns[key]; ok {
		grow -= kvEntryLen(key, old)
	}
	if nsBytes := t.kvBytes[namespace] + grow; nsBytes > MaxKVNamespaceBytes {
		return fmt.Errorf("%w: namespace %s would take %d bytes (at most %d)", ErrLimit, namespace, nsBytes, MaxKVNamespaceBytes)
	}
	if total := t.kvTotal + grow; total > MaxKVTotalBytes {
		return fmt.Errorf("%w: the KV store would take %d bytes (at most %d)", ErrLimit, total, MaxKVTotalBytes)
	}
	return nil
}

// refuseRegistration is REGISTER_BROKER's answer to a registration past a
// bound.
func refuseRegistration(req *protocol.Command, err error) *protocol.Command {
	return protocol.NewResponse(req, protocol.SystemError, "register broker refused: "+err.Error())
}
