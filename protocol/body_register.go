package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
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
// empty body gives an empty table with a zero version, as Java does. A
// compressed body may inflate to at most DefaultMaxInflated bytes
// (DecodeRegisterBrokerBodyLimit sets another bound).
func DecodeRegisterBrokerBody(data []byte, compressed bool, version int16) (*RegisterBrokerBody, error) {
	return DecodeRegisterBrokerBodyLimit(data, compressed, version, DefaultMaxInflated)
}

// DefaultMaxInflated bounds what a compressed body may inflate to: the
// default frame limit, so a broker's table that would not fit a frame as
// plain JSON does not fit compressed either.
const DefaultMaxInflated = DefaultMaxFrame

// ErrInflatedTooLarge is a compressed body that inflates past its bound.
var ErrInflatedTooLarge = errors.New("protocol: compressed body inflates past its limit")

// DecodeRegisterBrokerBodyLimit is DecodeRegisterBrokerBody with the bound
// on the inflated size (DefaultMaxInflated when limit <= 0). No declared
// length is ever allocated: each piece is copied out of the inflater into
// a buffer that grows as bytes arrive, so a body that lies about a piece's
// length costs what it really inflates to, and at most limit in all; past
// the limit the error wraps ErrInflatedTooLarge.
func DecodeRegisterBrokerBodyLimit(data []byte, compressed bool, version int16, limit int) (*RegisterBrokerBody, error) {
	if limit <= 0 {
		limit = DefaultMaxInflated
	}
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
	defer func() { _ = zr.Close() }()
	lr := &io.LimitedReader{R: zr, N: int64(limit)}
	var piece bytes.Buffer
	next := func() ([]byte, error) {
		var n int32
		if err := binary.Read(lr, binary.BigEndian, &n); err != nil {
			return nil, overLimit(lr, err)
		}
		if n < 0 {
			return nil, fmt.Errorf("piece length %d", n)
		}
		if int64(n) > lr.N {
			return nil, fmt.Errorf("%w (%d bytes): piece length %d", ErrInflatedTooLarge, limit, n)
		}
		piece.Reset()
		if m, err := io.CopyN(&piece, lr, int64(n)); err != nil {
			return nil, fmt.Errorf("piece of %d bytes ends after %d: %w", n, m, overLimit(lr, err))
		}
		return piece.Bytes(), nil
	}
	fail := func(what string, err error) (*RegisterBrokerBody, error) {
		if errors.Is(err, ErrInflatedTooLarge) {
			return nil, fmt.Errorf("%w: compressed register body: %s: %w", ErrBadBody, what, err)
		}
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
		return fail("topic count", overLimit(lr, err))
	}
	for i := int32(0); i < count; i++ {
		p, err := next()
		if err != nil {
			return fail("topic config", err)
		}
		tc, n, ok := ParseTopicConfig(p)
		if !ok || n != len(p) {
			tc = TopicConfig{}
			if err := UnmarshalBody(p, &tc); err != nil {
				return nil, err
			}
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

// overLimit tells a read cut short by the limit (lr.N reached 0) from one
// cut short by the body's end.
func overLimit(lr *io.LimitedReader, err error) error {
	if err != nil && lr.N <= 0 {
		return fmt.Errorf("%w: %v", ErrInflatedTooLarge, err)
	}
	return err
}

// EncodeCompressed writes b in RocketMQ's deflated register layout (for
// VersionV5_0_0 and later peers it ends with an empty queue-mapping count).
func (b *RegisterBrokerBody) EncodeCompressed(version int16) ([]byte, error) {
	return b.EncodeCompressedLevel(version, zlib.BestCompression)
}

// EncodeCompressedLevel is EncodeCompressed at a zlib level of the
// caller's (zlib.BestSpeed deflates a large table several times faster
// than BestCompression, for a body a few tens of percent larger).
func (b *RegisterBrokerBody) EncodeCompressedLevel(version int16, level int) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, err
	}
	put := func(p []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		// Into memory: cannot fail; a zlib error would stick and come
		// back from Close, which is checked.
		_, _ = zw.Write(n[:])
		_, _ = zw.Write(p)
	}
	dv, err := MarshalBody(b.TopicConfigSerializeWrapper.DataVersion)
	if err != nil {
		return nil, err
	}
	put(dv)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b.TopicConfigSerializeWrapper.TopicConfigTable)))
	_, _ = zw.Write(n[:])
	var p []byte
	for _, name := range sortedKeys(b.TopicConfigSerializeWrapper.TopicConfigTable) {
		p = AppendTopicConfig(p[:0], b.TopicConfigSerializeWrapper.TopicConfigTable[name])
		put(p)
	}
	fl := b.FilterServerList
	if fl == nil {
		fl = []string{}
	}
	p, err = MarshalBody(fl)
	if err != nil {
		return nil, err
	}
	put(p)
	if version >= VersionV5_0_0 {
		_, _ = zw.Write([]byte{0, 0, 0, 0})
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CreateTopicListRequestBody is UPDATE_AND_CREATE_TOPIC_LIST's body
// (RocketMQ's CreateTopicListRequestBody): the topics to create or update.
type CreateTopicListRequestBody struct {
	TopicConfigList []TopicConfig `json:"topicConfigList"`
}
