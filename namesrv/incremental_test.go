package namesrv

import (
	"fmt"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// An incremental registration is refused from a broker the name server
// does not hold, and applied from one it does.
func TestIncrementalRegistration(t *testing.T) {
	srv := startServer(t, Options{})
	c := dial(t, srv.Addr())
	inc := registration("c1", "broker-a", 0, "127.0.0.1:10911", 2, topicConfig("N", 1))
	inc.Header.Incremental = true
	body, _ := protocol.MarshalBody(inc.Body)
	if resp := c.mustRoundTrip(protocol.RegisterBroker, inc.Header.Encode(), body); resp.Code != protocol.SystemError {
		t.Fatalf("incremental from an unknown broker: %s", resp)
	}
	if _, ok := srv.mu.routes.Route("N"); ok {
		t.Fatal("refused increment recorded")
	}
	c.register(registration("c1", "broker-a", 0, "127.0.0.1:10911", 1, topicConfig("T", 4), topicConfig("U", 2)))
	c.register(inc)
	for _, topic := range []string{"T", "U", "N"} {
		if _, ok := srv.mu.routes.Route(topic); !ok {
			t.Fatalf("topic %s not routed after full then incremental registration", topic)
		}
	}
	if dv, _ := srv.mu.routes.DataVersion("c1", "127.0.0.1:10911"); dv.Counter != 2 {
		t.Fatalf("held version %+v, want the increment's", dv)
	}
}

// A full registration split in chunks under one data version: every
// chunk's topics are routed, a changed one in a later chunk too, and the
// topic list's byte count follows topics in and out.
func TestChunkedRegistrationAndTopicListBytes(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	var chunks [][]protocol.TopicConfig
	for i := range 3 {
		var ch []protocol.TopicConfig
		for j := range 4 {
			ch = append(ch, topicConfig(fmt.Sprintf("t%d-%d", i, j), 4))
		}
		chunks = append(chunks, ch)
	}
	for _, ch := range chunks {
		mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, ch...))
	}
	// A second full registration, same version, one topic changed in the
	// last chunk.
	chunks[2][3].WriteQueueNums = 8
	for _, ch := range chunks {
		mustRegister(t, rt, registration("c1", "a", 0, "a:1", 1, ch...))
	}
	if n := len(rt.Topics()); n != 12 {
		t.Fatalf("%d topics routed, want 12", n)
	}
	if rd, _ := rt.Route("t2-3"); rd.QueueDatas[0].WriteQueueNums != 8 {
		t.Fatalf("changed topic in a later chunk not read: %+v", rd.QueueDatas[0])
	}
	want := func() int {
		n := 0
		for name := range rt.topics {
			n += jsonLen(name)
		}
		return n
	}
	if rt.topicListBytes != want() {
		t.Fatalf("topic list bytes %d, want %d", rt.topicListBytes, want())
	}
	rt.DeleteTopic("t0-0", "")
	rt.DeleteTopic("t0-1", "c1")
	rt.DeleteTopic("missing", "")
	if rt.topicListBytes != want() {
		t.Fatalf("after deletes: topic list bytes %d, want %d", rt.topicListBytes, want())
	}
	rt.UnregisterBroker(protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerAddr: "a:1"})
	if rt.topicListBytes != 0 || len(rt.topics) != 0 {
		t.Fatalf("after the broker left: %d bytes, %d topics", rt.topicListBytes, len(rt.topics))
	}
}
