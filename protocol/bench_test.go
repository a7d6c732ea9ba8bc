package protocol

import (
	"bytes"
	"fmt"
	"testing"
)

func benchCommand(st SerializeType) *Command {
	h := fullHeaders()["PullMessageRequestHeader"].Encode()
	return &Command{Code: PullMessage, Language: "GO", Version: DefaultVersion, Opaque: 12345, ExtFields: h,
		Body: make([]byte, 1024), Serialize: st}
}

func BenchmarkAppendCommand(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run("header="+st.String(), func(b *testing.B) {
			c := benchCommand(st)
			buf, _ := AppendCommand(nil, c)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = AppendCommand(buf[:0], c)
			}
		})
	}
}

func BenchmarkReadCommand(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run("header="+st.String(), func(b *testing.B) {
			frame, _ := AppendCommand(nil, benchCommand(st))
			r := bytes.NewReader(frame)
			scratch := make([]byte, 0, 64<<10)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(frame)
				if _, err := ReadCommand(r, 0, scratch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run("header="+st.String(), func(b *testing.B) {
			frame, _ := AppendCommand(nil, benchCommand(st))
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeFrame(frame[4:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFrame reads a 1 KiB-body frame into a reused buffer (the
// hot path: no allocation) and, with buf=none, into a fresh one (a frame
// larger than the caller's buffer, read in growing chunks).
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{1 << 10, 256 << 10} {
		c := benchCommand(SerializeRocketMQ)
		c.Body = make([]byte, size)
		frame, _ := AppendCommand(nil, c)
		for _, reuse := range []bool{true, false} {
			name := fmt.Sprintf("body=%dKiB/buf=reused", size>>10)
			if !reuse {
				name = fmt.Sprintf("body=%dKiB/buf=none", size>>10)
			}
			b.Run(name, func(b *testing.B) {
				r := bytes.NewReader(frame)
				var scratch []byte
				if reuse {
					scratch = make([]byte, 0, len(frame))
				}
				b.SetBytes(int64(len(frame)))
				b.ReportAllocs()
				for b.Loop() {
					r.Reset(frame)
					if _, err := ReadFrame(r, 0, scratch); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
