package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadBatch is wrapped by errors decoding a SEND_BATCH_MESSAGE body.
var ErrBadBatch = errors.New("broker: bad batch body")

// batchItem is one message of a batch body.
type batchItem struct {
	Flag       int32
	Body       []byte // aliases the request body
	Properties []byte // aliases the request body
}

// Batch item layout (RocketMQ's MessageDecoder.encodeMessage, what
// MessageBatch.encode and the Go client's Message.Marshal write), big-endian:
//
//	off  size  field
//	  0     4  TOTALSIZE   this item's bytes, this field included
//	  4     4  MAGICCODE   (ignored: clients write 0)
//	  8     4  BODYCRC     (ignored: the store computes it)
//	 12     4  FLAG
//	 16   4+n  BODY        length + bytes
//	  .   2+n  PROPERTIES  length + "name\x01value\x02" pairs
const batchItemFixed = 4 + 4 + 4 + 4 + 4 + 2

// decodeBatch splits a batch body into its messages; maxBody bounds each
// body. Items alias body.
func decodeBatch(body []byte, maxBody int) ([]batchItem, error) {
	var items []batchItem
	for off := 0; off < len(body); {
		rest := body[off:]
		if len(rest) < batchItemFixed {
			return nil, fmt.Errorf("%w: %d trailing bytes at %d, an item needs %d", ErrBadBatch, len(rest), off, batchItemFixed)
		}
		total := int(int32(binary.BigEndian.Uint32(rest)))
		if total < batchItemFixed || total > len(rest) {
			return nil, fmt.Errorf("%w: item at %d declares %d bytes, %d left", ErrBadBatch, off, total, len(rest))
		}
		item := rest[:total]
		flag := int32(binary.BigEndian.Uint32(item[12:]))
		bl := int(int32(binary.BigEndian.Uint32(item[16:])))
		if bl < 0 || 20+bl+2 > total {
			return nil, fmt.Errorf("%w: item at %d: body length %d in a %d-byte item", ErrBadBatch, off, bl, total)
		}
		if bl > maxBody {
			return nil, fmt.Errorf("%w: item at %d: body of %d bytes exceeds maxMessageSize %d", ErrBadBatch, off, bl, maxBody)
		}
		pl := int(binary.BigEndian.Uint16(item[20+bl:]))
		if 20+bl+2+pl != total {
			return nil, fmt.Errorf("%w: item at %d: %d body + %d property bytes do not make its %d bytes", ErrBadBatch, off, bl, pl, total)
		}
		items = append(items, batchItem{Flag: flag, Body: item[20 : 20+bl], Properties: item[22+bl : total]})
		off += total
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadBatch)
	}
	return items, nil
}

// encodeBatch is decodeBatch's inverse (tests and tools).
func encodeBatch(items []batchItem) []byte {
	var out []byte
	for _, it := range items {
		total := batchItemFixed + len(it.Body) + len(it.Properties)
		out = binary.BigEndian.AppendUint32(out, uint32(total))
		out = binary.BigEndian.AppendUint32(out, 0)
		out = binary.BigEndian.AppendUint32(out, 0)
		out = binary.BigEndian.AppendUint32(out, uint32(it.Flag))
		out = binary.BigEndian.AppendUint32(out, uint32(len(it.Body)))
		out = append(out, it.Body...)
		out = binary.BigEndian.AppendUint16(out, uint16(len(it.Properties)))
		out = append(out, it.Properties...)
	}
	return out
}
