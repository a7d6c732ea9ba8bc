package broker

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// expectClosed reads from nc until EOF (the broker closed it) or fails.
func expectClosed(t *testing.T, nc net.Conn, what string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: connection still open after 5s", what)
		}
		return // EOF or reset: closed
	}
}

func frame(total uint32, mark uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, total)
	b = binary.BigEndian.AppendUint32(b, mark)
	return append(b, rest...)
}

func TestBadInput(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	ctl := dialRaw(t, b.Addr())
	ctl.call(createTopicReq("safe", 4))

	// A well-behaved producer runs throughout.
	const n = 2000
	var wg sync.WaitGroup
	acked := make([]bool, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := dialRaw(t, b.Addr())
		for i := 0; i < n; i++ {
			r := p.call(sendReq("safe", int32(i%4), []byte{byte(i), byte(i >> 8)}, nil))
			acked[i] = r.Code == protocol.Success
		}
	}()

	bad := []struct {
		name  string
		bytes []byte
	}{
		{"oversized frame", frame(0x7fff0000, 0, nil)},
		{"negative length", frame(0xffffffff, 0, nil)},
		{"header length past the frame", frame(8, 1000, []byte("abcd"))},
		{"garbage JSON header", func() []byte {
			h := []byte(`{"code":10,"opaque": garbage`)
			return frame(uint32(4+len(h)), uint32(len(h)), h)
		}()},
		{"unknown serialize type", func() []byte {
			h := []byte(`{}`)
			return frame(uint32(4+len(h)), 7<<24|uint32(len(h)), h)
		}()},
		{"truncated frame then EOF", frame(100, 10, []byte("short"))},
	}
	for _, tc := range bad {
		nc, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(tc.bytes); err != nil {
			t.Fatal(err)
		}
		if tc.name == "truncated frame then EOF" {
			nc.(*net.TCPConn).CloseWrite()
		}
		expectClosed(t, nc, tc.name)
		nc.Close()
	}

	// Requests the broker does not serve get an answer, and the
	// connection stays usable.
	c := dialRaw(t, b.Addr())
	for _, code := range []int32{9999, protocol.UpdateBrokerConfig, protocol.GetKVConfig} {
		r := c.call(protocol.NewRequest(code, map[string]string{"x": "y"}, []byte("body")))
		if r.Code != protocol.RequestCodeNotSupported || r.Remark == "" {
			t.Fatalf("code %d: %s", code, r)
		}
	}
	r := c.call(protocol.NewRequest(protocol.PullMessage, map[string]string{"queueId": "abc"}, nil))
	if r.Code != protocol.SystemError {
		t.Fatalf("bad header fields: %s", r)
	}
	r = c.call(protocol.NewRequest(protocol.HeartBeat, nil, []byte("{not json")))
	if r.Code != protocol.SystemError {
		t.Fatalf("garbage heartbeat body: %s", r)
	}
	if r := c.call(sendReq("safe", 0, []byte("still here"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}

	wg.Wait()
	for i, ok := range acked {
		if !ok {
			t.Fatalf("well-behaved send %d not acknowledged", i)
		}
	}
	// Every acknowledged message is there.
	waitFor(t, func() bool {
		total := int64(0)
		for q := int32(0); q < 4; q++ {
			total += b.store.MaxQueueOffset("safe", q)
		}
		return total == n+1
	}, "all messages dispatched")
	got := 0
	for q := int32(0); q < 4; q++ {
		for off := int64(0); ; {
			r := c.call(pullReq("g", "safe", q, off, 256, 0, "*"))
			if r.Code != protocol.Success {
				break
			}
			got += len(decodeRecords(t, r.Body))
			off = ext64(t, r, "nextBeginOffset")
		}
	}
	if got != n+1 {
		t.Fatalf("pulled %d messages, want %d", got, n+1)
	}
	if b.stats.badFrames.Load() < 5 {
		t.Fatalf("bad frames counted: %d", b.stats.badFrames.Load())
	}
}
