package metaq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderLen is a message's fixed part in a message set: length, checksum,
// id, flag.
const HeaderLen = 20

// FlagAttribute is the flag bit saying the data starts with an attribute.
const FlagAttribute = 1

// Checksum is MetaQ's checksum of a message's data.
func Checksum(data []byte) int32 { return int32(crc32.ChecksumIEEE(data) & 0x7FFFFFFF) }

// Message is one decoded message of a set.
type Message struct {
	ID      int64
	Flag    int32
	HasAttr bool   // Flag has FlagAttribute
	Attr    []byte // the attribute (aliases the set)
	Payload []byte // aliases the set
}

// Errors of the message-set decoder.
var (
	// ErrPartial: the set ends inside a message (a get cut by maxSize).
	ErrPartial = errors.New("metaq: the message set ends inside a message")
	// ErrChecksum: a message's data does not match its checksum.
	ErrChecksum = errors.New("metaq: message checksum mismatch")
	// ErrBadAttribute: the attribute length runs past the data.
	ErrBadAttribute = errors.New("metaq: attribute length runs past the message data")
)

// SplitData splits a put's value into attribute and payload by its flag.
func SplitData(flag int32, data []byte) (attr, payload []byte, hasAttr bool, err error) {
	if flag&FlagAttribute == 0 {
		return nil, data, false, nil
	}
	if len(data) < 4 {
		return nil, nil, true, fmt.Errorf("%w: %d bytes of data, no room for the attribute length", ErrBadAttribute, len(data))
	}
	n := binary.BigEndian.Uint32(data)
	if uint64(n) > uint64(len(data)-4) {
		return nil, nil, true, fmt.Errorf("%w: attribute of %d bytes in %d bytes of data", ErrBadAttribute, n, len(data))
	}
	return data[4 : 4+n], data[4+n:], true, nil
}

// DataLen is the length of a message's data: payload, plus the attribute
// and its length when hasAttr.
func DataLen(hasAttr bool, attrLen, payloadLen int) int {
	if hasAttr {
		return 4 + attrLen + payloadLen
	}
	return payloadLen
}

// EncodedLen is a message's length in a message set.
func EncodedLen(hasAttr bool, attrLen, payloadLen int) int {
	return HeaderLen + DataLen(hasAttr, attrLen, payloadLen)
}

// AppendMessage appends one message in the message-set format. With
// hasAttr the flag's FlagAttribute bit is set and the data starts with the
// attribute; otherwise the bit is cleared.
func AppendMessage(dst []byte, id int64, flag int32, hasAttr bool, attr, payload []byte) []byte {
	if hasAttr {
		flag |= FlagAttribute
	} else {
		flag &^= FlagAttribute
	}
	n := DataLen(hasAttr, len(attr), len(payload))
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, 0) // checksum, below
	dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	dst = binary.BigEndian.AppendUint32(dst, uint32(flag))
	data := len(dst)
	if hasAttr {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(attr)))
		dst = append(dst, attr...)
	}
	dst = append(dst, payload...)
	binary.BigEndian.PutUint32(dst[start+4:], uint32(Checksum(dst[data:])))
	return dst
}

// DecodeMessage decodes the message at the start of set and returns it
// with its encoded length. ErrPartial when set ends inside it.
func DecodeMessage(set []byte) (Message, int, error) {
	if len(set) < HeaderLen {
		return Message{}, 0, ErrPartial
	}
	n := binary.BigEndian.Uint32(set)
	if n > 1<<30 {
		return Message{}, 0, fmt.Errorf("metaq: message length %d is not plausible", n)
	}
	if uint64(len(set)-HeaderLen) < uint64(n) {
		return Message{}, 0, ErrPartial
	}
	data := set[HeaderLen : HeaderLen+int(n)]
	if Checksum(data) != int32(binary.BigEndian.Uint32(set[4:])) {
		return Message{}, 0, ErrChecksum
	}
	m := Message{ID: int64(binary.BigEndian.Uint64(set[8:])), Flag: int32(binary.BigEndian.Uint32(set[16:]))}
	var err error
	m.Attr, m.Payload, m.HasAttr, err = SplitData(m.Flag, data)
	if err != nil {
		return Message{}, 0, err
	}
	return m, HeaderLen + int(n), nil
}

// DecodeSet decodes the whole messages of set, as a MetaQ consumer does:
// it returns them and the bytes they took (the consumer's next offset is
// its offset plus used); a partial last message is left for the next get.
func DecodeSet(set []byte) (msgs []Message, used int, err error) {
	for used < len(set) {
		m, n, err := DecodeMessage(set[used:])
		if errors.Is(err, ErrPartial) {
			return msgs, used, nil
		}
		if err != nil {
			return msgs, used, err
		}
		msgs = append(msgs, m)
		used += n
	}
	return msgs, used, nil
}
