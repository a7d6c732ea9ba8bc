package ha

import (
	"bytes"
	"testing"
)

// Every decoder takes arbitrary bytes without panicking, and whatever it
// accepts encodes back to the same bytes (the format has one encoding).

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add(appendHandshake(nil, handshake{BrokerID: 1, Addr: "x:1", SegmentSize: 4096, MaxBody: 64}), byte(kindHandshake), 300)
	f.Add([]byte{kindTransfer, 1, 0, 0, 0xff, 0xff, 0xff, 0xff}, byte(kindTransfer), 1<<16)
	f.Add([]byte{kindAck, 1, 0, 0, 0, 0, 0, 8, 1, 2, 3}, byte(kindAck), 8)
	f.Fuzz(func(t *testing.T, b []byte, want byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		fr := frameReader{r: bytes.NewReader(b)}
		p, err := fr.next(want, max)
		if cap(fr.buf) > max {
			t.Fatalf("allocated %d bytes with a bound of %d", cap(fr.buf), max)
		}
		if err == nil && (len(p) > max || !bytes.Equal(p, b[envelopeSize:envelopeSize+len(p)])) {
			t.Fatalf("payload of %d bytes, bound %d", len(p), max)
		}
	})
}

func FuzzDecodeHandshake(f *testing.F) {
	f.Add(appendHandshake(nil, handshake{BrokerID: 1, Addr: "127.0.0.1:10912", SegmentSize: 1 << 30, MaxBody: 4 << 20})[envelopeSize:])
	f.Add(appendHandshake(nil, handshake{BrokerID: 2, SegmentSize: 4096, FromLastSegment: true})[envelopeSize:])
	f.Add([]byte("SMHA"))
	f.Fuzz(func(t *testing.T, p []byte) {
		h, err := decodeHandshake(p)
		if err != nil {
			return
		}
		if b := appendHandshake(nil, h)[envelopeSize:]; !bytes.Equal(b, p) {
			t.Fatalf("re-encoded %x, decoded from %x", b, p)
		}
	})
}

func FuzzDecodeHandshakeAnswer(f *testing.F) {
	f.Add(appendHandshakeReply(nil, handshakeReply{SegmentSize: 1 << 30, MinOffset: 0, Handed: 100, MaxBody: 32 << 10,
		Epochs: []Epoch{{1, 0}, {3, 50}}})[envelopeSize:])
	f.Add(appendHandshakeReply(nil, handshakeReply{Refused: true, Reason: "segment size mismatch"})[envelopeSize:])
	f.Add(make([]byte, replyFixed))
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeHandshakeReply(p)
		if err != nil {
			return
		}
		if b := appendHandshakeReply(nil, r)[envelopeSize:]; !bytes.Equal(b, p) {
			t.Fatalf("re-encoded %x, decoded from %x", b, p)
		}
	})
}

func FuzzDecodeTransfer(f *testing.F) {
	for _, h := range []transferHeader{
		{Offset: 4096, Epoch: 2, EpochStart: 100, Confirm: 4000, Handed: 8192, Size: 5},
		{Offset: 0, Epoch: 1, Handed: 0}, // heartbeat
	} {
		b := make([]byte, transferFrameHeader+h.Size)
		putTransferHeader(b, h)
		f.Add(b[envelopeSize:])
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		h, data, err := decodeTransfer(p)
		if err != nil {
			return
		}
		if h.Size != len(data) || h.Handed-int64(h.Size) < h.Offset || h.EpochStart > h.Offset {
			t.Fatalf("accepted %+v with %d data bytes", h, len(data))
		}
		b := make([]byte, transferFrameHeader+h.Size)
		putTransferHeader(b, h)
		copy(b[transferFrameHeader:], data)
		if !bytes.Equal(b[envelopeSize:], p) {
			t.Fatalf("re-encoded %x, decoded from %x", b[envelopeSize:], p)
		}
	})
}

func FuzzDecodeOffset(f *testing.F) { // TRANSFER-START and ACK
	var b [envelopeSize + offsetFrameSize]byte
	putOffsetFrame(&b, kindAck, 1<<40)
	f.Add(b[envelopeSize:])
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		off, err := decodeOffset(p, kindAck)
		if err != nil {
			return
		}
		putOffsetFrame(&b, kindAck, off)
		if !bytes.Equal(b[envelopeSize:], p) {
			t.Fatalf("re-encoded %x, decoded from %x", b[envelopeSize:], p)
		}
	})
}

func FuzzDecodeEpochFile(f *testing.F) {
	f.Add(encodeEpochFile([]Epoch{{1, 0}, {2, 4096}}))
	f.Add(encodeEpochFile(nil))
	f.Add([]byte(epochMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := decodeEpochFile(b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeEpochFile(list), b) {
			t.Fatalf("re-encoded differs for %x", b)
		}
	})
}
