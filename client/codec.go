package client

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/storage/record"
)

// validateMessage checks what the broker would reject, before sending.
func validateMessage(m *Message, maxBody int) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: nil message", ErrMessageIllegal)
	case m.Topic == "":
		return fmt.Errorf("%w: empty topic", ErrMessageIllegal)
	case len(m.Topic) > record.MaxTopicLen:
		return fmt.Errorf("%w: topic of %d bytes, limit %d", ErrMessageIllegal, len(m.Topic), record.MaxTopicLen)
	case len(m.Body) == 0:
		return fmt.Errorf("%w: empty body", ErrMessageIllegal)
	case maxBody > 0 && len(m.Body) > maxBody:
		return fmt.Errorf("%w: body of %d bytes, limit %d", ErrMessageIllegal, len(m.Body), maxBody)
	}
	for k, v := range m.Properties {
		if k == "" || !record.ValidProperty(k, v) {
			return fmt.Errorf("%w: property %q holds a separator byte or is empty", ErrMessageIllegal, k)
		}
	}
	if !record.ValidProperty(m.Tags, strings.Join(m.Keys, " ")) || !record.ValidProperty(m.ShardingKey, "") {
		return fmt.Errorf("%w: tags or keys hold a separator byte", ErrMessageIllegal)
	}
	return nil
}

// appendProperties appends m's properties as "name\x01value\x02" pairs:
// the user's, then TAGS, KEYS, DELAY, the sharding key and UNIQ_KEY
// (uniq, when not empty), as RocketMQ's producers put them.
func appendProperties(dst []byte, m *Message, uniq string) []byte {
	for k, v := range m.Properties {
		switch k {
		case PropertyTags, PropertyKeys, PropertyUniqKey:
			continue // the fields win
		}
		dst = record.AppendProperty(dst, k, v)
	}
	if m.Tags != "" {
		dst = record.AppendProperty(dst, PropertyTags, m.Tags)
	}
	if len(m.Keys) > 0 {
		dst = record.AppendProperty(dst, PropertyKeys, strings.Join(m.Keys, " "))
	}
	if m.DelayLevel > 0 {
		dst = record.AppendProperty(dst, PropertyDelayLevel, strconv.Itoa(m.DelayLevel))
	}
	if m.ShardingKey != "" {
		dst = record.AppendProperty(dst, PropertyShardingKey, m.ShardingKey)
	}
	if uniq != "" {
		dst = record.AppendProperty(dst, PropertyUniqKey, uniq)
	}
	return dst
}

// appendBatchEntry appends one message of a SEND_BATCH_MESSAGE body in
// RocketMQ's MessageDecoder.encodeMessage layout: total size, magic code
// (0), body CRC (0), flag, body length and body, properties length
// (int16) and properties.
func appendBatchEntry(dst []byte, m *Message, uniq string) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, 20)...) // size, magic, crc, flag, body length
	dst = append(dst, m.Body...)
	dst = append(dst, 0, 0)
	propStart := len(dst)
	dst = appendProperties(dst, m, uniq)
	propLen := len(dst) - propStart
	if propLen > record.MaxPropertiesLen {
		return dst[:start], fmt.Errorf("%w: properties of %d bytes", ErrMessageIllegal, propLen)
	}
	be := binary.BigEndian
	be.PutUint32(dst[start:], uint32(len(dst)-start))
	be.PutUint32(dst[start+12:], uint32(m.Flag))
	be.PutUint32(dst[start+16:], uint32(len(m.Body)))
	be.PutUint16(dst[propStart-2:], uint16(propLen))
	return dst, nil
}

// propertyName returns name as a string, without allocating for the
// names RocketMQ's producers put on (nearly) every message.
func propertyName(name []byte) string {
	switch string(name) { // the compiler compares without converting
	case PropertyUniqKey:
		return PropertyUniqKey
	case PropertyWaitStoreMsgOK:
		return PropertyWaitStoreMsgOK
	case PropertyTags:
		return PropertyTags
	case PropertyKeys:
		return PropertyKeys
	case PropertyCRC32:
		return PropertyCRC32
	case PropertyShardingKey:
		return PropertyShardingKey
	case PropertyDelayLevel:
		return PropertyDelayLevel
	case PropertyRetryTopic:
		return PropertyRetryTopic
	case PropertyReconsumeTime:
		return PropertyReconsumeTime
	case PropertyMaxReconsume:
		return PropertyMaxReconsume
	case PropertyRealTopic:
		return PropertyRealTopic
	case PropertyRealQueueID:
		return PropertyRealQueueID
	case PropertyProducerGroup:
		return PropertyProducerGroup
	case PropertyOriginMsgID:
		return PropertyOriginMsgID
	case PropertyConsumeStart:
		return PropertyConsumeStart
	}
	return string(name)
}

// deflate compresses a body as RocketMQ 4.x producers do (zlib).
func deflate(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b) / 2)
	zw := zlib.NewWriter(&out)
	_, _ = zw.Write(b) // into memory: cannot fail
	_ = zw.Close()
	return out.Bytes()
}

func inflate(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	defer func() { _ = zr.Close() }()
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return out, nil
}

// tagFilter matches a subscription expression: "*" (or empty) for every
// message, else tags joined by "||".
type tagFilter struct {
	all  bool
	tags []string
}

func parseTagFilter(expr string) tagFilter {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return tagFilter{all: true}
	}
	var f tagFilter
	for _, t := range strings.Split(expr, "||") {
		if t = strings.TrimSpace(t); t != "" {
			f.tags = append(f.tags, t)
		}
	}
	if len(f.tags) == 0 {
		f.all = true
	}
	return f
}

func (f tagFilter) match(tags string) bool {
	if f.all {
		return true
	}
	for _, t := range f.tags {
		if t == tags {
			return true
		}
	}
	return false
}

// codes returns the tag hash codes of the expression (for SubscriptionData).
func (f tagFilter) codes() []int64 {
	var out []int64
	for _, t := range f.tags {
		out = append(out, record.TagsCode(t))
	}
	return out
}
