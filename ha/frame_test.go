package ha

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	hs := handshake{BrokerID: 3, Addr: "10.0.0.7:10912", SegmentSize: 1 << 30, MaxBody: 4 << 20, FromLastSegment: true}
	rep := handshakeReply{SegmentSize: 1 << 30, MinOffset: 1 << 30, Handed: 5 << 30, MaxBody: 4 << 20,
		Epochs: []Epoch{{1, 0}, {2, 4096}, {7, 1 << 31}}}
	refused := handshakeReply{Refused: true, Reason: "segment size 4096, master has 8192", SegmentSize: 8192}
	th := transferHeader{Offset: 1 << 30, Epoch: 7, EpochStart: 4096, Confirm: 100, Handed: 1<<30 + 5}

	var stream bytes.Buffer
	stream.Write(appendHandshake(nil, hs))
	stream.Write(appendHandshakeReply(nil, rep))
	stream.Write(appendHandshakeReply(nil, refused))
	var of [envelopeSize + offsetFrameSize]byte
	putOffsetFrame(&of, kindTransferStart, 12345)
	stream.Write(of[:])
	data := []byte("hello")
	th.Size = len(data)
	tf := make([]byte, transferFrameHeader+len(data))
	putTransferHeader(tf, th)
	copy(tf[transferFrameHeader:], data)
	stream.Write(tf)
	putOffsetFrame(&of, kindAck, 99)
	stream.Write(of[:])

	fr := frameReader{r: &stream}
	p, err := fr.next(kindHandshake, maxHandshake)
	must(t, err)
	gotHS, err := decodeHandshake(p)
	must(t, err)
	if !reflect.DeepEqual(gotHS, hs) {
		t.Fatalf("handshake %+v, want %+v", gotHS, hs)
	}
	for _, want := range []handshakeReply{rep, refused} {
		p, err = fr.next(kindHandshakeReply, maxReply)
		must(t, err)
		got, err := decodeHandshakeReply(p)
		must(t, err)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("reply %+v, want %+v", got, want)
		}
	}
	p, err = fr.next(kindTransferStart, offsetFrameSize)
	must(t, err)
	if off, err := decodeOffset(p, kindTransferStart); err != nil || off != 12345 {
		t.Fatalf("transfer start %d, %v", off, err)
	}
	p, err = fr.next(kindTransfer, transferHeaderSize+16)
	must(t, err)
	gotTH, gotData, err := decodeTransfer(p)
	must(t, err)
	if gotTH != th || string(gotData) != "hello" {
		t.Fatalf("transfer %+v %q, want %+v hello", gotTH, gotData, th)
	}
	p, err = fr.next(kindAck, offsetFrameSize)
	must(t, err)
	if off, err := decodeOffset(p, kindAck); err != nil || off != 99 {
		t.Fatalf("ack %d, %v", off, err)
	}
	if _, err := fr.next(kindAck, offsetFrameSize); err != io.EOF {
		t.Fatalf("at the end: %v, want EOF", err)
	}
}

// A declared length above the bound is refused from the envelope alone:
// the reader neither reads nor allocates the payload.
func TestFrameBoundBeforeAllocation(t *testing.T) {
	th := transferHeader{Offset: 0, Epoch: 1, Handed: 1 << 20, Size: 1 << 20}
	hdr := make([]byte, transferFrameHeader)
	putTransferHeader(hdr, th) // declares 1 MiB of data but carries none
	fr := frameReader{r: bytes.NewReader(hdr)}
	_, err := fr.next(kindTransfer, transferHeaderSize+32<<10)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("oversized frame: %v, want ErrProtocol", err)
	}
	if cap(fr.buf) != 0 {
		t.Fatalf("reader allocated %d bytes for a refused frame", cap(fr.buf))
	}
	// The largest possible LENGTH is refused the same way.
	var env [envelopeSize]byte
	putEnvelope(env[:], kindHandshake, 0)
	env[4], env[5], env[6], env[7] = 0xff, 0xff, 0xff, 0xff
	fr = frameReader{r: bytes.NewReader(env[:])}
	if _, err := fr.next(kindHandshake, maxHandshake); !errors.Is(err, ErrProtocol) || cap(fr.buf) != 0 {
		t.Fatalf("4 GiB handshake: %v, buffer %d", err, cap(fr.buf))
	}
}

func TestFrameRejects(t *testing.T) {
	good := appendHandshake(nil, handshake{BrokerID: 1, Addr: "a", SegmentSize: 4096, MaxBody: 100})
	cases := map[string]func([]byte){
		"version":                         func(b []byte) { b[1] = 2 },
		"reserved":                        func(b []byte) { b[3] = 1 },
		"kind":                            func(b []byte) { b[0] = kindAck },
		"magic":                           func(b []byte) { b[envelopeSize] = 'X' },
		"flags":                           func(b []byte) { b[envelopeSize+5] |= 4 },
		"auth flag without an access key": func(b []byte) { b[envelopeSize+5] |= 2 },
		"addrlen":                         func(b []byte) { b[envelopeSize+7] = 9 },
		"segsize":                         func(b []byte) { copy(b[envelopeSize+16:], make([]byte, 8)) },
	}
	for name, mutate := range cases {
		b := bytes.Clone(good)
		mutate(b)
		fr := frameReader{r: bytes.NewReader(b)}
		p, err := fr.next(kindHandshake, maxHandshake)
		if err == nil {
			_, err = decodeHandshake(p)
		}
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
	// A torn payload is an unexpected EOF, not a clean end.
	fr := frameReader{r: bytes.NewReader(good[:len(good)-1])}
	if _, err := fr.next(kindHandshake, maxHandshake); err != io.ErrUnexpectedEOF {
		t.Errorf("torn frame: %v", err)
	}
	// Unordered epochs in an answer.
	b := appendHandshakeReply(nil, handshakeReply{SegmentSize: 4096, Handed: 10, Epochs: []Epoch{{2, 0}, {1, 5}}})
	if _, err := decodeHandshakeReply(b[envelopeSize:]); !errors.Is(err, ErrProtocol) {
		t.Errorf("unordered epochs: %v", err)
	}
	// A transfer whose data runs past the handed offset it states.
	tf := make([]byte, transferFrameHeader+10)
	putTransferHeader(tf, transferHeader{Offset: 100, Epoch: 1, Handed: 105, Size: 10})
	if _, _, err := decodeTransfer(tf[envelopeSize:]); !errors.Is(err, ErrProtocol) {
		t.Errorf("transfer past handed: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
