package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// registerBomb is a compressed register body whose first piece declares
// declared bytes and holds only real zero bytes.
func registerBomb(declared int32, real int) []byte {
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(declared))
	zw.Write(n[:])
	zw.Write(make([]byte, real))
	zw.Close()
	return buf.Bytes()
}

func TestRegisterBodyDeclaredLengthNotAllocated(t *testing.T) {
	bomb := registerBomb(256<<20, 0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeRegisterBrokerBodyLimit(bomb, true, VersionV5_0_0, 1<<30)
	runtime.ReadMemStats(&after)
	if err == nil || !errors.Is(err, ErrBadBody) {
		t.Fatalf("bomb of %d bytes declaring 256 MiB: err %v, want ErrBadBody", len(bomb), err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("a %d-byte body declaring 256 MiB allocated %d bytes", len(bomb), got)
	}
}

func TestRegisterBodyInflateLimit(t *testing.T) {
	// 2 MiB of real zeros inflated against a 1 MiB limit: refused with
	// ErrInflatedTooLarge, not read to the end.
	bomb := registerBomb(2<<20, 2<<20)
	if _, err := DecodeRegisterBrokerBodyLimit(bomb, true, VersionV5_0_0, 1<<20); !errors.Is(err, ErrInflatedTooLarge) {
		t.Fatalf("over the limit: err %v, want ErrInflatedTooLarge", err)
	}
	// A real body over a small limit is refused the same way; under the
	// limit it decodes.
	body := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{TopicConfigTable: map[string]TopicConfig{}}}
	for i := 0; i < 200; i++ {
		name := "topic-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		body.TopicConfigSerializeWrapper.TopicConfigTable[name] = TopicConfig{TopicName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
	}
	z, err := body.EncodeCompressed(VersionV5_0_0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRegisterBrokerBodyLimit(z, true, VersionV5_0_0, 4<<10); !errors.Is(err, ErrInflatedTooLarge) {
		t.Fatalf("200 topics within 4 KiB: err %v, want ErrInflatedTooLarge", err)
	}
	back, err := DecodeRegisterBrokerBodyLimit(z, true, VersionV5_0_0, 0)
	if err != nil || len(back.TopicConfigSerializeWrapper.TopicConfigTable) != 200 {
		t.Fatalf("under the default limit: %v", err)
	}
	// A negative count or a piece length past the limit is a bad body.
	if _, err := DecodeRegisterBrokerBodyLimit(registerBomb(-1, 0), true, VersionV5_0_0, 0); !errors.Is(err, ErrBadBody) {
		t.Fatalf("negative piece length: %v", err)
	}
}
