package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// DataVersion is RocketMQ's change stamp of a broker's topic table.
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"` // ms since the epoch of the last change
	Counter      int64 `json:"counter"`   // bumped on every change
}

// TopicConfig is one topic as a broker holds it.
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"`            // Perm* bits
	TopicFilterType string            `json:"topicFilterType"` // TopicFilterSingleTag, TopicFilterMultiTag
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes,omitempty"`
}

// TopicConfigSerializeWrapper is a broker's topic table with its version:
// REGISTER_BROKER's main content and GET_ALL_TOPIC_CONFIG's answer.
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// MarshalJSON writes an empty table as {}.
func (w TopicConfigSerializeWrapper) MarshalJSON() ([]byte, error) {
	type plain TopicConfigSerializeWrapper
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]TopicConfig{}
	}
	return json.Marshal(plain(w))
}

// RegisterBrokerBody is REGISTER_BROKER's body.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// MarshalJSON writes an empty filter list as [].
func (b RegisterBrokerBody) MarshalJSON() ([]byte, error) {
	type plain RegisterBrokerBody
	if b.FilterServerList == nil {
		b.FilterServerList = []string{}
	}
	return json.Marshal(plain(b))
}

// KVTable is a namespace's key-value pairs (REGISTER_BROKER's answer body
// carries the ORDER_TOPIC_CONFIG table).
type KVTable struct {
	Table map[string]string `json:"table"`
}

// DecodeRegisterBrokerBody decodes a REGISTER_BROKER body: JSON, or when
// the header says compressed, RocketMQ's deflated layout (int32-length
// prefixed JSON of the data version, a count of topic configs each
// length-prefixed JSON, the filter-server list as JSON, and from
// VersionV5_0_0 on a count of queue-mapping entries, which Samsa skips). An
// empty body gives an empty table with a zero version, as Java does.
func DecodeRegisterBrokerBody(data []byte, compressed bool, version int16) (*RegisterBrokerBody, error) {
	body := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{TopicConfigTable: map[string]TopicConfig{}}}
	if len(data) == 0 {
		return body, nil
	}
	if !compressed {
		if version != 0 && version < VersionV3_0_11 { // a bare wrapper from an ancient broker
			return body, UnmarshalBody(data, &body.TopicConfigSerializeWrapper)
		}
		if err := UnmarshalBody(data, body); err != nil {
			return nil, err
		}
		if body.TopicConfigSerializeWrapper.TopicConfigTable == nil {
			body.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		}
		return body, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: register body: %v", ErrBadBody, err)
	}
	defer zr.Close()
	// Every piece is read through a length prefix checked against the
	// decompressed size so far, bounded by maxDeflated.
	lr := &io.LimitedReader{R: zr, N: maxDeflated}
	next := func() ([]byte, error) {
		var n int32
		if err := binary.Read(lr, binary.BigEndian, &n); err != nil {
			return nil, err
		}
		if n < 0 || int64(n) > lr.N {
			return nil, fmt.Errorf("piece length %d", n)
		}
		p := make([]byte, n)
		_, err := io.ReadFull(lr, p)
		return p, err
	}
	fail := func(what string, err error) (*RegisterBrokerBody, error) {
		return nil, fmt.Errorf("%w: compressed register body: %s: %v", ErrBadBody, what, err)
	}
	p, err := next()
	if err != nil {
		return fail("data version", err)
	}
	if err := UnmarshalBody(p, &body.TopicConfigSerializeWrapper.DataVersion); err != nil {
		return nil, err
	}
	var count int32
	if err := binary.Read(lr, binary.BigEndian, &count); err != nil || count < 0 {
		return fail("topic count", err)
	}
	for i := int32(0); i < count; i++ {
		p, err := next()
		if err != nil {
			return fail("topic config", err)
		}
		var tc TopicConfig
		if err := UnmarshalBody(p, &tc); err != nil {
			return nil, err
		}
		body.TopicConfigSerializeWrapper.TopicConfigTable[tc.TopicName] = tc
	}
	if p, err = next(); err != nil {
		return fail("filter server list", err)
	}
	if err := UnmarshalBody(p, &body.FilterServerList); err != nil {
		return nil, err
	}
	return body, nil
}

// maxDeflated bounds what a compressed register body may inflate to.
const maxDeflated = 256 << 20

// EncodeCompressed writes b in RocketMQ's deflated register layout (for
// VersionV5_0_0 and later peers it ends with an empty queue-mapping count).
func (b *RegisterBrokerBody) EncodeCompressed(version int16) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	put := func(p []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		zw.Write(n[:])
		zw.Write(p)
	}
	dv, err := MarshalBody(b.TopicConfigSerializeWrapper.DataVersion)
	if err != nil {
		return nil, err
	}
	put(dv)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b.TopicConfigSerializeWrapper.TopicConfigTable)))
	zw.Write(n[:])
	for _, name := range sortedKeys(b.TopicConfigSerializeWrapper.TopicConfigTable) {
		p, err := MarshalBody(b.TopicConfigSerializeWrapper.TopicConfigTable[name])
		if err != nil {
			return nil, err
		}
		put(p)
	}
	fl := b.FilterServerList
	if fl == nil {
		fl = []string{}
	}
	p, err := MarshalBody(fl)
	if err != nil {
		return nil, err
	}
	put(p)
	if version >= VersionV5_0_0 {
		zw.Write([]byte{0, 0, 0, 0})
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
