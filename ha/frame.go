package ha

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The replication link is a plain TCP stream of frames (its own port,
// haListenPort; not remoting). Every frame is an 8-byte envelope and a
// payload. Big-endian throughout.
//
// Envelope:
//
//	off  size  field     why
//	  0     1  KIND      which payload follows (kind* constants)
//	  1     1  VERSION   frameVersion: a later format is refused, not misread
//	  2     2  RESERVED  0
//	  4     4  LENGTH    payload bytes; checked against the kind's bound
//	                     before anything is read or allocated
//
// HANDSHAKE, slave → master, first frame of a link:
//
//	  0     4  MAGIC     "SMHA": refuses a client on the wrong port
//	  4     2  FLAGS     bit 0: an empty slave starts at the master's last
//	                     segment (else at its oldest retained byte)
//	  6     2  ADDRLEN   ≤ maxAddrLen
//	  8     8  BROKERID  the slave's broker id (> 0)
//	 16     8  SEGSIZE   the slave's segment size: must equal the master's
//	 24     4  MAXBODY   the largest TRANSFER data the slave accepts
//	 28     .  ADDR      the slave's advertised address (for status)
//
// With FLAGS bit 1 (the slave has an account; the master runs with ACL on)
// the handshake goes on after ADDR:
//
//	  .     2  AKLEN     ≤ maxAddrLen
//	  .     .  ACCESSKEY the slave's account
//	  .     8  TIME      the slave's clock, Unix ms: a copy replayed later
//	                     than maxHandshakeSkew is refused
//	  .    20  MAC       HmacSHA1(secretKey, every payload byte before it)
//
// HANDSHAKE answer, master → slave:
//
//	  0     2  STATUS    0 accepted, 1 refused (REASON says why)
//	  2     2  REASONLEN ≤ maxReasonLen
//	  4     4  NEPOCHS   ≤ MaxEpochs
//	  8     8  SEGSIZE   the master's segment size
//	 16     8  MINOFFSET the master's oldest retained byte
//	 24     8  HANDED    the master's handed offset: the end of its last epoch
//	 32     4  MAXBODY   the largest TRANSFER data the master sends
//	 36     .  REASON
//	  .  16×n  EPOCHS    EPOCH 8, START 8: the master's epoch list, to find
//	                     the consistent point
//
// TRANSFER-START, slave → master: OFFSET 8, where the slave's log ends
// after any truncation; the master streams from there (it is also the
// slave's first acknowledgement).
//
// TRANSFER, master → slave:
//
//	  0     8  OFFSET    CommitLog offset of DATA's first byte
//	  8     8  EPOCH     the epoch DATA belongs to (a frame never spans two)
//	 16     8  EPOCHSTART where that epoch starts
//	 24     8  CONFIRM   the offset every in-sync replica holds
//	 32     8  HANDED    the master's handed offset (the slave's lag)
//	 40     .  DATA      LENGTH−40 bytes of whole records; none = heartbeat
//
// ACK, slave → master: OFFSET 8, the slave's log end (its durable offset
// with SlaveConfig.AckFlushed), after each append and on heartbeats.

const (
	kindHandshake      byte = 1
	kindHandshakeReply byte = 2
	kindTransferStart  byte = 3
	kindTransfer       byte = 4
	kindAck            byte = 5

	frameVersion   = 1
	envelopeSize   = 8
	handshakeMagic = "SMHA"

	handshakeFixed     = 28
	replyFixed         = 36
	transferHeaderSize = 40
	offsetFrameSize    = 8
	epochEntrySize     = 16

	maxAddrLen   = 255
	maxReasonLen = 1024
	// MaxEpochs bounds an epoch list, on the wire and in the file.
	MaxEpochs = 1024

	authFixed    = 2 + 8 + macSize
	maxHandshake = handshakeFixed + maxAddrLen + authFixed + maxAddrLen
	maxReply     = replyFixed + maxReasonLen + MaxEpochs*epochEntrySize

	flagFromLastSegment = 1
	flagAuth            = 2
)

var kindNames = [...]string{kindHandshake: "HANDSHAKE", kindHandshakeReply: "HANDSHAKE-ANSWER",
	kindTransferStart: "TRANSFER-START", kindTransfer: "TRANSFER", kindAck: "ACK"}

func kindName(k byte) string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", k)
}

// handshake is the slave's opening frame.
type handshake struct {
	BrokerID        int64
	Addr            string
	SegmentSize     int64
	MaxBody         int
	FromLastSegment bool
	// Authentication (flagAuth): AccessKey and TimeMs travel, SecretKey
	// only makes MAC (appendHandshake); Signed is what MAC covers (set by
	// decodeHandshake).
	AccessKey string
	SecretKey string
	TimeMs    int64
	MAC       []byte
	Signed    []byte
}

// handshakeReply is the master's answer.
type handshakeReply struct {
	Refused     bool
	Reason      string
	SegmentSize int64
	MinOffset   int64
	Handed      int64
	MaxBody     int
	Epochs      []Epoch
}

// transferHeader heads a TRANSFER frame; Size is its data length.
type transferHeader struct {
	Offset     int64
	Epoch      uint64
	EpochStart int64
	Confirm    int64
	Handed     int64
	Size       int
}

var be = binary.BigEndian

func putEnvelope(b []byte, kind byte, n int) {
	b[0], b[1], b[2], b[3] = kind, frameVersion, 0, 0
	be.PutUint32(b[4:], uint32(n))
}

// decodeEnvelope checks an envelope against the expected kind and the
// payload bound, and returns the payload length.
func decodeEnvelope(h []byte, want byte, max int) (int, error) {
	if len(h) != envelopeSize {
		return 0, fmt.Errorf("%w: envelope of %d bytes", ErrProtocol, len(h))
	}
	if h[1] != frameVersion || h[2] != 0 || h[3] != 0 {
		return 0, fmt.Errorf("%w: frame version %d (reserved %#x), want %d", ErrProtocol, h[1], h[2:4], frameVersion)
	}
	if h[0] != want {
		return 0, fmt.Errorf("%w: got %s, want %s", ErrProtocol, kindName(h[0]), kindName(want))
	}
	n := be.Uint32(h[4:])
	if uint64(n) > uint64(max) {
		return 0, fmt.Errorf("%w: %s of %d bytes, bound %d", ErrProtocol, kindName(want), n, max)
	}
	return int(n), nil
}

// frameReader reads frames from a stream into one reused buffer.
type frameReader struct {
	r   io.Reader
	hdr [envelopeSize]byte
	buf []byte
}

// next reads one frame of kind want whose payload is at most max bytes and
// returns the payload (valid until the next call). It allocates only when
// a payload is larger than any before, and never beyond max.
func (fr *frameReader) next(want byte, max int) ([]byte, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return nil, err
	}
	n, err := decodeEnvelope(fr.hdr[:], want, max)
	if err != nil {
		return nil, err
	}
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n)
	}
	p := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return p, nil
}

func appendHandshake(b []byte, h handshake) []byte {
	n := handshakeFixed + len(h.Addr)
	if h.AccessKey != "" {
		n += authFixed + len(h.AccessKey)
	}
	b, p := grow(b, envelopeSize+n)
	putEnvelope(p, kindHandshake, n)
	p = p[envelopeSize:]
	copy(p, handshakeMagic)
	var flags uint16
	if h.FromLastSegment {
		flags |= flagFromLastSegment
	}
	if h.AccessKey != "" {
		flags |= flagAuth
		q := handshakeFixed + len(h.Addr)
		be.PutUint16(p[q:], uint16(len(h.AccessKey)))
		q += 2 + copy(p[q+2:], h.AccessKey)
		be.PutUint64(p[q:], uint64(h.TimeMs))
		q += 8
		defer func() { copy(p[q:], handshakeMAC(h.SecretKey, p[:q])) }()
	}
	be.PutUint16(p[4:], flags)
	be.PutUint16(p[6:], uint16(len(h.Addr)))
	be.PutUint64(p[8:], uint64(h.BrokerID))
	be.PutUint64(p[16:], uint64(h.SegmentSize))
	be.PutUint32(p[24:], uint32(h.MaxBody))
	copy(p[28:], h.Addr)
	return b
}

func decodeHandshake(p []byte) (handshake, error) {
	var h handshake
	if len(p) < handshakeFixed || string(p[:4]) != handshakeMagic {
		return h, fmt.Errorf("%w: HANDSHAKE of %d bytes without magic", ErrProtocol, len(p))
	}
	flags := be.Uint16(p[4:])
	if flags&^(flagFromLastSegment|flagAuth) != 0 {
		return h, fmt.Errorf("%w: HANDSHAKE flags %#x", ErrProtocol, flags)
	}
	al := int(be.Uint16(p[6:]))
	end := handshakeFixed + al
	if flags&flagAuth != 0 {
		if al > maxAddrLen || len(p) < end+2 {
			return h, fmt.Errorf("%w: HANDSHAKE of %d bytes with an address of %d and no access key", ErrProtocol, len(p), al)
		}
		akl := int(be.Uint16(p[end:]))
		if akl == 0 || akl > maxAddrLen || len(p) != end+authFixed+akl {
			return h, fmt.Errorf("%w: HANDSHAKE of %d bytes with an access key of %d", ErrProtocol, len(p), akl)
		}
		h.AccessKey = string(p[end+2 : end+2+akl])
		h.TimeMs = int64(be.Uint64(p[end+2+akl:]))
		signedEnd := end + 2 + akl + 8
		h.Signed = append([]byte(nil), p[:signedEnd]...)
		h.MAC = append([]byte(nil), p[signedEnd:]...)
		p = p[:end]
	}
	if al > maxAddrLen || len(p) != end {
		return h, fmt.Errorf("%w: HANDSHAKE of %d bytes with an address of %d", ErrProtocol, len(p), al)
	}
	h.FromLastSegment = flags&flagFromLastSegment != 0
	h.BrokerID = int64(be.Uint64(p[8:]))
	h.SegmentSize = int64(be.Uint64(p[16:]))
	h.MaxBody = int(be.Uint32(p[24:]))
	h.Addr = string(p[28:])
	if h.SegmentSize <= 0 || h.MaxBody < 0 || h.MaxBody > maxWireBody {
		return h, fmt.Errorf("%w: HANDSHAKE segment size %d, max body %d", ErrProtocol, h.SegmentSize, h.MaxBody)
	}
	return h, nil
}

// maxWireBody bounds MAXBODY so that the TRANSFER header plus MAXBODY fits an int32 LENGTH.
const maxWireBody = 1<<31 - 1 - transferHeaderSize

func appendHandshakeReply(b []byte, r handshakeReply) []byte {
	n := replyFixed + len(r.Reason) + len(r.Epochs)*epochEntrySize
	b, p := grow(b, envelopeSize+n)
	putEnvelope(p, kindHandshakeReply, n)
	p = p[envelopeSize:]
	var status uint16
	if r.Refused {
		status = 1
	}
	be.PutUint16(p[0:], status)
	be.PutUint16(p[2:], uint16(len(r.Reason)))
	be.PutUint32(p[4:], uint32(len(r.Epochs)))
	be.PutUint64(p[8:], uint64(r.SegmentSize))
	be.PutUint64(p[16:], uint64(r.MinOffset))
	be.PutUint64(p[24:], uint64(r.Handed))
	be.PutUint32(p[32:], uint32(r.MaxBody))
	q := replyFixed + copy(p[replyFixed:], r.Reason)
	for _, e := range r.Epochs {
		be.PutUint64(p[q:], e.Epoch)
		be.PutUint64(p[q+8:], uint64(e.Start))
		q += epochEntrySize
	}
	return b
}

func decodeHandshakeReply(p []byte) (handshakeReply, error) {
	var r handshakeReply
	if len(p) < replyFixed {
		return r, fmt.Errorf("%w: HANDSHAKE-ANSWER of %d bytes", ErrProtocol, len(p))
	}
	status := be.Uint16(p[0:])
	rl := int(be.Uint16(p[2:]))
	ne := be.Uint32(p[4:])
	if status > 1 || rl > maxReasonLen || ne > MaxEpochs || len(p) != replyFixed+rl+int(ne)*epochEntrySize {
		return r, fmt.Errorf("%w: HANDSHAKE-ANSWER of %d bytes: status %d, reason %d bytes, %d epochs", ErrProtocol, len(p), status, rl, ne)
	}
	r.Refused = status == 1
	r.SegmentSize = int64(be.Uint64(p[8:]))
	r.MinOffset = int64(be.Uint64(p[16:]))
	r.Handed = int64(be.Uint64(p[24:]))
	r.MaxBody = int(be.Uint32(p[32:]))
	r.Reason = string(p[replyFixed : replyFixed+rl])
	if ne > 0 {
		r.Epochs = make([]Epoch, ne)
		q := replyFixed + rl
		for i := range r.Epochs {
			r.Epochs[i] = Epoch{Epoch: be.Uint64(p[q:]), Start: int64(be.Uint64(p[q+8:]))}
			q += epochEntrySize
		}
	}
	if r.Refused {
		return r, nil
	}
	if r.SegmentSize <= 0 || r.MinOffset < 0 || r.Handed < r.MinOffset || r.MaxBody < 0 || r.MaxBody > maxWireBody {
		return r, fmt.Errorf("%w: HANDSHAKE-ANSWER segment size %d, min %d, handed %d, max body %d",
			ErrProtocol, r.SegmentSize, r.MinOffset, r.Handed, r.MaxBody)
	}
	if err := validEpochs(r.Epochs); err != nil {
		return r, fmt.Errorf("%w: HANDSHAKE-ANSWER: %w", ErrProtocol, err)
	}
	return r, nil
}

// transferFrameHeader is the envelope and the TRANSFER header: a sender
// reads data into buf[transferFrameHeader:] and puts the header in front.
const transferFrameHeader = envelopeSize + transferHeaderSize

// putTransferHeader writes the envelope and header of a TRANSFER frame
// carrying h.Size data bytes into b[:transferFrameHeader].
func putTransferHeader(b []byte, h transferHeader) {
	putEnvelope(b, kindTransfer, transferHeaderSize+h.Size)
	p := b[envelopeSize:transferFrameHeader]
	be.PutUint64(p[0:], uint64(h.Offset))
	be.PutUint64(p[8:], h.Epoch)
	be.PutUint64(p[16:], uint64(h.EpochStart))
	be.PutUint64(p[24:], uint64(h.Confirm))
	be.PutUint64(p[32:], uint64(h.Handed))
}

// decodeTransfer splits a TRANSFER payload into its header and data.
func decodeTransfer(p []byte) (transferHeader, []byte, error) {
	var h transferHeader
	if len(p) < transferHeaderSize {
		return h, nil, fmt.Errorf("%w: TRANSFER of %d bytes", ErrProtocol, len(p))
	}
	h.Offset = int64(be.Uint64(p[0:]))
	h.Epoch = be.Uint64(p[8:])
	h.EpochStart = int64(be.Uint64(p[16:]))
	h.Confirm = int64(be.Uint64(p[24:]))
	h.Handed = int64(be.Uint64(p[32:]))
	h.Size = len(p) - transferHeaderSize
	if h.Offset < 0 || h.EpochStart < 0 || h.EpochStart > h.Offset || h.Confirm < 0 || h.Handed < 0 || h.Handed-int64(h.Size) < h.Offset {
		return h, nil, fmt.Errorf("%w: TRANSFER offset %d, size %d, epoch %d from %d, confirm %d, handed %d",
			ErrProtocol, h.Offset, h.Size, h.Epoch, h.EpochStart, h.Confirm, h.Handed)
	}
	return h, p[transferHeaderSize:], nil
}

// putOffsetFrame writes a TRANSFER-START or ACK frame into b.
func putOffsetFrame(b *[envelopeSize + offsetFrameSize]byte, kind byte, off int64) {
	putEnvelope(b[:], kind, offsetFrameSize)
	be.PutUint64(b[envelopeSize:], uint64(off))
}

// decodeOffset decodes a TRANSFER-START or ACK payload.
func decodeOffset(p []byte, kind byte) (int64, error) {
	if len(p) != offsetFrameSize {
		return 0, fmt.Errorf("%w: %s of %d bytes", ErrProtocol, kindName(kind), len(p))
	}
	off := int64(be.Uint64(p))
	if off < 0 {
		return 0, fmt.Errorf("%w: %s offset %d", ErrProtocol, kindName(kind), off)
	}
	return off, nil
}

// grow extends b by n bytes and returns it and the new part.
func grow(b []byte, n int) ([]byte, []byte) {
	l := len(b)
	b = append(b, make([]byte, n)...)
	return b, b[l:]
}
