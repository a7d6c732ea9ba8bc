package protocol

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// respVariants gives ext maps of a send answer around h: as encoded, and
// variations DecodeSendResponseFrame must take or hand to the map path.
func respVariants(r *rand.Rand, h *SendMessageResponseHeader) []map[string]string {
	keys := []string{"msgId", "queueId", "queueOffset", "transactionId", "batchUniqId", "MSG_REGION", "TRACE_ON"}
	values := []string{"", "+5", "-0", "007", "9223372036854775808", "2147483648", "-2147483649", "1e3", " 1", "x", "12"}
	out := []map[string]string{h.Encode()}
	for range 6 {
		m := h.Encode()
		switch r.IntN(3) {
		case 0:
			delete(m, keys[r.IntN(len(keys))])
		case 1:
			m[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
		case 2:
			m["extra"] = values[r.IntN(len(values))]
		}
		out = append(out, m)
	}
	return out
}

// DecodeSendResponseFrame gives what DecodeFrame and
// SendMessageResponseHeader.Decode give: the same header or the same
// error, the same command otherwise.
func TestSendResponseDecodeMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	taken := 0
	for i := range 1500 {
		h := typedHeaders(r)[2].(*SendMessageResponseHeader)
		for _, ext := range respVariants(r, h) {
			for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
				c := &Command{Code: Success, Opaque: int32(i), Flag: FlagResponse, Remark: "ok", ExtFields: ext, Serialize: st}
				if i%4 == 0 {
					c.Body = []byte("body")
				}
				frame, err := AppendCommand(nil, c)
				if err != nil {
					t.Fatal(err)
				}
				frame = frame[4:]
				if op, flag, ok := FrameOpaque(frame); ok != (st == SerializeRocketMQ) || ok && (op != int32(i) || flag != FlagResponse) {
					t.Fatalf("FrameOpaque %d %d %v", op, flag, ok)
				}
				plain, err1 := DecodeFrame(frame)
				typed, err2 := DecodeSendResponseFrame(frame)
				if err1 != nil || err2 != nil {
					t.Fatalf("%v %v", err1, err2)
				}
				if typed.Header == nil {
					if !reflect.DeepEqual(plain, typed) {
						t.Fatalf("untaken frame decodes differently:\n%#v\n%#v", plain, typed)
					}
					continue
				}
				taken++
				if typed.ExtFields != nil || typed.Code != plain.Code || typed.Opaque != plain.Opaque || typed.Flag != plain.Flag ||
					typed.Remark != plain.Remark || typed.Language != plain.Language || typed.Version != plain.Version ||
					typed.Serialize != plain.Serialize || !bytes.Equal(typed.Body, plain.Body) {
					t.Fatalf("commands differ:\n%#v\n%#v", plain, typed)
				}
				var want SendMessageResponseHeader
				if err := want.Decode(plain.ExtFields); err != nil {
					t.Fatalf("a frame the typed decoder took fails the map path: %v\n%v", err, plain.ExtFields)
				}
				if got := *typed.Header.(*SendMessageResponseHeader); got != want {
					t.Fatalf("headers differ:\nmap   %+v\ntyped %+v", want, got)
				}
			}
		}
	}
	if taken < 2000 {
		t.Fatalf("the typed decoder took only %d frames", taken)
	}
}

// Cut and garbled frames: DecodeSendResponseFrame errs exactly when
// DecodeFrame does.
func TestSendResponseDecodeBadFrames(t *testing.T) {
	h := &SendMessageResponseHeader{MsgID: "ID", QueueID: 3, QueueOffset: 42}
	frame, _ := AppendCommand(nil, &Command{Code: Success, Flag: FlagResponse, Header: h, Serialize: SerializeRocketMQ})
	frame = frame[4:]
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 3000 {
		f := append([]byte(nil), frame...)
		if i%2 == 0 {
			f = f[:r.IntN(len(f)+1)]
		} else {
			f[r.IntN(len(f))] = byte(r.Uint32())
		}
		_, err1 := DecodeFrame(f)
		_, err2 := DecodeSendResponseFrame(f)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ on %q: %v, %v", f, err1, err2)
		}
	}
}
