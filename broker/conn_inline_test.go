package broker

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// Sends written in one go are gathered by the reader and appended
// together: each gets its own answer and offset, a refused one (too large)
// its own error, a one-way one none, and a pull between them is served.
func TestInlineSendsPipelined(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.MaxMessageSize = 1024 })
	defer b.Close()
	rc := dialRaw(t, b.Addr())
	if r := rc.call(createTopicReq("inline", 2)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	const n = 800
	var frames []byte
	waits := map[int]chan *protocol.Command{}
	rc.mu.Lock()
	for i := range n {
		body := []byte(fmt.Sprintf("m%d", i))
		if i == 17 {
			body = make([]byte, 2048) // over maxMessageSize
		}
		req := sendReq("inline", int32(i%2), body, nil)
		switch {
		case i == 50:
			req = pullReq("g", "inline", 0, 0, 4, 0, "*")
		case i == 60:
			req.MarkOneway()
		case i%3 == 0:
			v2 := &protocol.SendMessageRequestHeaderV2{}
			h, _ := protocol.DecodeSendMessageRequest(req)
			v2.SendMessageRequestHeader = *h
			req = protocol.NewRequest(protocol.SendMessageV2, v2.Encode(), body)
		}
		rc.opaque++
		req.Opaque = rc.opaque
		if !req.IsOneway() {
			ch := make(chan *protocol.Command, 1)
			rc.wait[req.Opaque] = ch
			waits[i] = ch
		}
		frames, _ = protocol.AppendCommand(frames, req)
	}
	rc.mu.Unlock()
	if _, err := rc.nc.(*net.TCPConn).Write(frames); err != nil {
		t.Fatal(err)
	}
	offsets := map[int32]map[int64]bool{0: {}, 1: {}}
	for i := range n {
		ch, ok := waits[i]
		if !ok {
			continue
		}
		var r *protocol.Command
		select {
		case r = <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to request %d", i)
		}
		switch {
		case i == 17:
			if r.Code != protocol.MessageIllegal {
				t.Fatalf("oversized send: %s", r)
			}
		case i == 50:
			if r.Code != protocol.Success && r.Code != protocol.PullNotFound && r.Code != protocol.PullOffsetMoved {
				t.Fatalf("pull: %s", r)
			}
		default:
			if r.Code != protocol.Success {
				t.Fatalf("send %d: %s", i, r)
			}
			q, off := int32(ext64(t, r, "queueId")), ext64(t, r, "queueOffset")
			if offsets[q][off] {
				t.Fatalf("send %d: queue %d offset %d given twice", i, q, off)
			}
			offsets[q][off] = true
		}
	}
	// n sends less the oversized and the pull; the one-way one is stored too.
	deadline := time.Now().Add(10 * time.Second)
	for b.Store().MaxQueueOffset("inline", 0)+b.Store().MaxQueueOffset("inline", 1) != n-2 {
		if time.Now().After(deadline) {
			t.Fatalf("stored %d+%d, want %d", b.Store().MaxQueueOffset("inline", 0), b.Store().MaxQueueOffset("inline", 1), n-2)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Every stored body is its own (frames were decoded in the read
	// buffer, which later reads reuse).
	seen := map[string]bool{}
	for q := int32(0); q < 2; q++ {
		for off := int64(0); off < b.Store().MaxQueueOffset("inline", q); {
			r := rc.call(pullReq("g", "inline", q, off, 32, 0, "*"))
			if r.Code != protocol.Success {
				t.Fatalf("pull q%d@%d: %s", q, off, r)
			}
			recs := decodeRecords(t, r.Body)
			for _, rec := range recs {
				seen[string(rec.Body)] = true
			}
			off += int64(len(recs))
		}
	}
	for i := range n {
		if i == 17 || i == 50 {
			continue
		}
		if !seen[fmt.Sprintf("m%d", i)] {
			t.Fatalf("body m%d not stored (stored %d bodies)", i, len(seen))
		}
	}
}
