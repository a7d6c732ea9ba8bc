package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxFrame is the default limit on a frame's total length field
// (RocketMQ's NettyDecoder uses the same 16 MiB).
const DefaultMaxFrame = 16 << 20

// maxHeaderLength is what the mark field's 24 bits can say.
const maxHeaderLength = 1<<24 - 1

// Errors, matchable with errors.Is. Each is wrapped with the detail.
var (
	// ErrFrameTooLarge: the total length field exceeds the limit (or is negative).
	ErrFrameTooLarge = errors.New("protocol: frame too large")
	// ErrBadHeaderLength: the header length runs past the frame, or the frame
	// is too short to hold the mark field.
	ErrBadHeaderLength = errors.New("protocol: bad header length")
	// ErrBadHeader: the header does not decode (bad JSON, truncated binary,
	// unknown serialize type, a value out of range).
	ErrBadHeader = errors.New("protocol: bad header")
)

// ReadFrame reads one frame from r into buf (grown when too small) and
// returns the frame without its length prefix: mark, header, body. The total
// length is checked against maxFrame (DefaultMaxFrame when <= 0) first; a
// frame that does not fit buf is then read in chunks into a buffer that
// grows as its bytes arrive (see ReadFrameGrow), so a peer that announces a
// large frame and sends little costs little. A clean EOF before the first
// byte is io.EOF; a frame cut short is io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxFrame int, buf []byte) ([]byte, error) {
	return ReadFrameWhole(r, maxFrame, buf, growChunk)
}

// ReadFrameWhole is ReadFrame for a peer trusted with whole bytes: a frame
// of up to whole bytes that does not fit buf is read into one buffer of its
// length, allocated at once; a larger one grows as ReadFrame's do. A client
// reading its broker's answers uses it: a pull's answer a little over
// ReadFrame's first chunk (64 pulled 1 KiB messages) cost it two
// allocations and a copy, twice the frame's bytes.
func ReadFrameWhole(r io.Reader, maxFrame int, buf []byte, whole int) ([]byte, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	var lenBuf []byte
	if cap(buf) >= 4 {
		lenBuf = buf[:4]
	} else {
		var a [4]byte
		lenBuf = a[:]
	}
	if _, err := io.ReadFull(r, lenBuf); err != nil {
		return nil, err
	}
	n, err := FrameLength(lenBuf, maxFrame)
	if err != nil {
		return nil, err
	}
	if cap(buf) >= n {
		frame := buf[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			return nil, unexpectedEOF(err)
		}
		return frame, nil
	}
	return readFrameGrow(r, n, max(whole, growChunk))
}

// FrameLength reads a frame's 4-byte total length field and checks it:
// at least 4 (room for the mark) and at most maxFrame.
func FrameLength(p []byte, maxFrame int) (int, error) {
	n := int64(int32(binary.BigEndian.Uint32(p)))
	if n < 0 || n > int64(maxFrame) {
		return 0, fmt.Errorf("%w: total length %d, limit %d", ErrFrameTooLarge, n, maxFrame)
	}
	if n < 4 {
		return 0, fmt.Errorf("%w: total length %d leaves no room for the mark", ErrBadHeaderLength, n)
	}
	return int(n), nil
}

// growChunk is the first allocation of ReadFrameGrow; each later one at
// most doubles what has arrived.
const growChunk = 64 << 10

// ReadFrameGrow reads the n bytes of a frame whose length field was already
// read and checked. It never holds more than twice what has arrived plus
// growChunk: the buffer starts at min(n, growChunk) and doubles (capped at
// n) only when full, so memory follows the bytes the peer actually sent.
func ReadFrameGrow(r io.Reader, n int) ([]byte, error) { return readFrameGrow(r, n, growChunk) }

// readFrameGrow is ReadFrameGrow with a first allocation of min(n, first).
func readFrameGrow(r io.Reader, n, first int) ([]byte, error) {
	frame := make([]byte, 0, min(n, first))
	for len(frame) < n {
		if len(frame) == cap(frame) {
			next := make([]byte, len(frame), min(n, 2*cap(frame)))
			copy(next, frame)
			frame = next
		}
		m, err := io.ReadFull(r, frame[len(frame):cap(frame)])
		frame = frame[:len(frame)+m]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return frame, nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// DecodeFrame decodes a frame as ReadFrame returns it (mark, header, body).
// The Command's Body aliases frame; its strings do not.
func DecodeFrame(frame []byte) (*Command, error) { return decodeFrame(frame, false) }

// DecodeRequestFrame is DecodeFrame for a server's hot path: the ext fields
// of a send request (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE,
// SEND_REPLY_MESSAGE_V2) are decoded straight into Command.Header (a
// *SendMessageRequestHeader or *SendMessageRequestHeaderV2, which
// DecodeSendMessageRequest returns without a map), ExtFields keeping only
// the fields the header does not know. A send header the typed decoder does
// not take whole (a required field missing, a number that does not parse)
// is decoded as DecodeFrame does, so DecodeSendMessageRequest reports it as
// before. Every other command decodes as with DecodeFrame.
func DecodeRequestFrame(frame []byte) (*Command, error) { return decodeFrame(frame, true) }

func decodeFrame(frame []byte, typed bool) (*Command, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("%w: frame of %d bytes has no mark", ErrBadHeaderLength, len(frame))
	}
	mark := binary.BigEndian.Uint32(frame)
	hl := int(mark & maxHeaderLength)
	if hl > len(frame)-4 {
		return nil, fmt.Errorf("%w: header length %d, frame holds %d", ErrBadHeaderLength, hl, len(frame)-4)
	}
	st := SerializeType(mark >> 24)
	c := &Command{}
	if err := decodeHeader(st, frame[4:4+hl], c, typed); err != nil {
		return nil, err
	}
	if body := frame[4+hl:]; len(body) > 0 {
		c.Body = body
	}
	return c, nil
}

// ReadCommand reads and decodes one frame. buf is scratch the caller may
// reuse at once: the Command never aliases it (when the frame fits buf, the
// body is copied out; when it does not, the frame gets its own allocation and
// the body aliases that). Errors: those of ReadFrame and DecodeFrame.
func ReadCommand(r io.Reader, maxFrame int, buf []byte) (*Command, error) {
	return readCommand(r, maxFrame, buf, false)
}

// ReadRequest is ReadCommand decoding as DecodeRequestFrame does.
func ReadRequest(r io.Reader, maxFrame int, buf []byte) (*Command, error) {
	return readCommand(r, maxFrame, buf, true)
}

func readCommand(r io.Reader, maxFrame int, buf []byte, typed bool) (*Command, error) {
	frame, err := ReadFrame(r, maxFrame, buf)
	if err != nil {
		return nil, err
	}
	c, err := decodeFrame(frame, typed)
	if err != nil {
		return nil, err
	}
	if c.Body != nil && cap(buf) >= len(frame) {
		c.Body = append([]byte(nil), c.Body...)
	}
	return c, nil
}

// DecodeHeader decodes a header of the given serialization into c's header
// fields (not Body) and sets c.Serialize.
func DecodeHeader(st SerializeType, h []byte, c *Command) error {
	return decodeHeader(st, h, c, false)
}

func decodeHeader(st SerializeType, h []byte, c *Command, typed bool) error {
	c.Serialize = st
	switch st {
	case SerializeJSON:
		return decodeJSONHeader(h, c, typed)
	case SerializeRocketMQ:
		return decodeBinaryHeader(h, c, typed)
	}
	return fmt.Errorf("%w: unknown serialize type %d", ErrBadHeader, uint8(st))
}

// AppendHeader appends c's header, serialized as c.Serialize says.
func AppendHeader(dst []byte, c *Command) ([]byte, error) {
	switch c.Serialize {
	case SerializeJSON:
		return appendJSONHeader(dst, c), nil
	case SerializeRocketMQ:
		return appendBinaryHeader(dst, c)
	}
	return dst, fmt.Errorf("%w: unknown serialize type %d", ErrBadHeader, uint8(c.Serialize))
}

// AppendCommand encodes one whole frame of c onto dst (length prefix, mark,
// header, body). On error dst is returned as it was.
func AppendCommand(dst []byte, c *Command) ([]byte, error) {
	out, err := AppendFrameHead(dst, c, len(c.Body))
	if err != nil {
		return dst, err
	}
	return append(out, c.Body...), nil
}

// AppendFrameHead encodes a frame of c without its body: the length prefix
// counts bodyLen bytes the caller writes after it (from a file, a second
// buffer with writev, ...). c.Body is ignored. On error dst is returned as it
// was.
func AppendFrameHead(dst []byte, c *Command, bodyLen int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	out, err := AppendHeader(dst, c)
	if err != nil {
		return dst[:start], err
	}
	hl := len(out) - start - 8
	if hl > maxHeaderLength {
		return dst[:start], fmt.Errorf("%w: header of %d bytes exceeds the 24-bit field", ErrBadHeaderLength, hl)
	}
	total := int64(4) + int64(hl) + int64(bodyLen)
	if bodyLen < 0 || total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: total length %d", ErrFrameTooLarge, total)
	}
	binary.BigEndian.PutUint32(out[start:], uint32(total))
	binary.BigEndian.PutUint32(out[start+4:], uint32(c.Serialize)<<24|uint32(hl))
	return out, nil
}
