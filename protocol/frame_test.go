package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"
)

func sampleCommand(st SerializeType) *Command {
	return &Command{
		Code: GetRouteInfoByTopic, Language: "GO", Version: DefaultVersion, Opaque: 42, Flag: 0,
		Remark: "héllo \"quoted\"\n", ExtFields: map[string]string{"topic": "T1", "bname": "broker-a"},
		Body: []byte("payload"), Serialize: st,
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			c := sampleCommand(st)
			frame, err := AppendCommand(nil, c)
			if err != nil {
				t.Fatal(err)
			}
			if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
				t.Fatalf("total length %d, frame %d", got, len(frame))
			}
			if frame[4] != byte(st) {
				t.Fatalf("serialize byte %d", frame[4])
			}
			buf := make([]byte, 0, 4096)
			got, err := ReadCommand(bytes.NewReader(frame), 0, buf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c) {
				t.Fatalf("got %+v\nwant %+v", got, c)
			}
			// Body must not alias the caller's buffer.
			buf = buf[:cap(buf)]
			for i := range buf {
				buf[i] = 'x'
			}
			if string(got.Body) != "payload" {
				t.Fatalf("body aliases the scratch buffer: %q", got.Body)
			}
		})
	}
}

func TestFrameErrors(t *testing.T) {
	frame := func(total uint32, mark uint32, rest []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, total)
		b = binary.BigEndian.AppendUint32(b, mark)
		return append(b, rest...)
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"too large", frame(DefaultMaxFrame+1, 0, nil), ErrFrameTooLarge},
		{"negative", frame(0x80000000, 0, nil), ErrFrameTooLarge},
		{"no mark", binary.BigEndian.AppendUint32(nil, 2), ErrBadHeaderLength},
		{"header past frame", frame(8, 10, []byte("{}{}")), ErrBadHeaderLength},
		{"garbage json", frame(8, 4, []byte("{x:1")), ErrBadHeader},
		{"short binary", frame(8, 1<<24|4, []byte{0, 1, 2, 3}), ErrBadHeader},
		{"unknown serialize", frame(6, 7<<24|2, []byte("{}")), ErrBadHeader},
		{"cut short", frame(100, 2, []byte("{}")), io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCommand(bytes.NewReader(tc.in), 0, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := ReadCommand(bytes.NewReader(nil), 0, nil); err != io.EOF {
		t.Fatalf("empty stream: %v", err)
	}
}

// TestReadFrameWhole: a frame up to whole bytes is read into one buffer of
// its length; ReadFrame grows one larger than its first chunk.
func TestReadFrameWhole(t *testing.T) {
	c := &Command{Code: 11, Body: bytes.Repeat([]byte("x"), 100<<10)}
	raw, err := AppendCommand(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := ReadFrameWhole(bytes.NewReader(raw), 0, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) != len(raw)-4 || cap(frame) != len(frame) {
		t.Fatalf("frame of %d bytes (cap %d), want %d in a buffer of its length", len(frame), cap(frame), len(raw)-4)
	}
	grown, err := ReadFrame(bytes.NewReader(raw), 0, nil)
	if err != nil || !bytes.Equal(grown, frame) {
		t.Fatalf("ReadFrame: %v, same bytes %v", err, bytes.Equal(grown, frame))
	}
	if _, err := ReadFrameWhole(bytes.NewReader(raw[:len(raw)-1]), 0, nil, 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut frame: %v, want io.ErrUnexpectedEOF", err)
	}
}
