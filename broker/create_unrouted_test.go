package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/samsamq/samsa/namesrv"
	"github.com/samsamq/samsa/protocol"
)

// A create the name server cannot route, its topic list being full
// (namesrv.MaxTopicListBytes), is answered SYSTEM_ERROR saying the topic
// is stored but not routed: the broker holds it, the name server does not.
func TestCreateStoredNotRoutedWhenTopicListFull(t *testing.T) {
	ns := startNamesrv(t)
	b := startBroker(t, "", withNamesrv(ns.Addr(), nil))
	defer b.Close()
	// Other brokers fill the name server's topic list with names of the
	// longest a broker takes, in registrations of fewer and fewer topics,
	// until not one more fits.
	nc := dialRaw(t, ns.Addr())
	register := func(g, n int) bool {
		body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
			TopicConfigTable: make(map[string]protocol.TopicConfig, n), DataVersion: protocol.DataVersion{Timestamp: 1, Counter: 1}}}
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%04d-%04d", strings.Repeat("f", MaxTopicLength-10), g, i)
			body.TopicConfigSerializeWrapper.TopicConfigTable[name] = protocol.TopicConfig{TopicName: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
		}
		raw, err := protocol.MarshalBody(body)
		if err != nil {
			t.Fatal(err)
		}
		h := protocol.RegisterBrokerRequestHeader{BrokerName: fmt.Sprint("filler-", g), BrokerAddr: fmt.Sprintf("127.0.0.1:%d", 20000+g),
			ClusterName: "filler", HAServerAddr: "127.0.0.1:1", BodyCrc32: protocol.BodyCRC32(raw)}
		r := nc.call(protocol.NewRequest(protocol.RegisterBroker, h.Encode(), raw))
		if r.Code != protocol.Success && !strings.Contains(r.Remark, "topic list") {
			t.Fatalf("filler registration refused for another reason: %d %q", r.Code, r.Remark)
		}
		return r.Code == protocol.Success
	}
	g := 0
	for _, n := range []int{4096, 512, 64, 8, 1} {
		for ; register(g, n); g++ {
			if g > 500 {
				t.Fatal("the name server never refused a registration")
			}
		}
		g++
	}

	c := dialRaw(t, b.Addr())
	unrouted := "u" + strings.Repeat("n", MaxTopicLength-1)
	r := c.call(createTopicReq(unrouted, 2))
	if r.Code != protocol.SystemError || !strings.HasPrefix(r.Remark, "topic stored, but ") || !strings.Contains(r.Remark, "topic list") {
		t.Fatalf("create past the name server's topic list: code %d remark %q", r.Code, r.Remark)
	}
	if tc, ok := b.topics.get(unrouted); !ok || tc.WriteQueueNums != 2 {
		t.Fatalf("the refused create's topic on the broker: %+v %v", tc, ok)
	}
	routed := true
	ns.Inspect(func(rt *namesrv.RouteTable) { _, routed = rt.Route(unrouted) })
	if routed {
		t.Fatal("the name server routes a topic it refused")
	}
}
