package broker

import (
	"testing"

	"github.com/samsamq/samsa/protocol"
)

func routeOf(t *testing.T, ns *rawClient, topic string) (*protocol.TopicRouteData, int32) {
	t.Helper()
	h := protocol.GetRouteInfoRequestHeader{Topic: topic}
	r := ns.call(protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
	if r.Code != protocol.Success {
		return nil, r.Code
	}
	var rd protocol.TopicRouteData
	if err := protocol.UnmarshalBody(r.Body, &rd); err != nil {
		t.Fatal(err)
	}
	return &rd, r.Code
}

// TestRegistration: the broker registers its topics (TBW102 included) at
// start, a created topic is routable as soon as the creation is answered,
// a deleted one leaves the broker, GET_ALL_TOPIC_CONFIG lists them, and a clean close
// unregisters the broker.
func TestRegistration(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ns := dialRaw(t, dev.NamesrvAddr())
	if rd, code := routeOf(t, ns, AutoCreateTopicKey); code != protocol.Success || len(rd.QueueDatas) != 1 ||
		rd.QueueDatas[0].Perm&PermInherit == 0 {
		t.Fatalf("TBW102 route: %v %d", rd, code)
	}
	c := dialRaw(t, dev.BrokerAddr())
	if r := c.call(createTopicReq("routed", 3)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	rd, code := routeOf(t, ns, "routed")
	if code != protocol.Success || rd.QueueDatas[0].WriteQueueNums != 3 || rd.BrokerDatas[0].BrokerAddrs[0] != dev.BrokerAddr() {
		t.Fatalf("route after create: %+v %d", rd, code)
	}
	r := c.call(protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))
	var w protocol.TopicConfigSerializeWrapper
	if err := protocol.UnmarshalBody(r.Body, &w); err != nil || w.TopicConfigTable["routed"].ReadQueueNums != 3 {
		t.Fatalf("all topic config: %v %+v", err, w.TopicConfigTable["routed"])
	}
	dh := protocol.DeleteTopicRequestHeader{Topic: "routed"}
	if r := c.call(protocol.NewRequest(protocol.DeleteTopicInBroker, dh.Encode(), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	// (The name server keeps the route until DELETE_TOPIC_IN_NAMESRV, as
	// RocketMQ's does; the broker forgets the topic.)
	if _, ok := dev.Broker.topics.get("routed"); ok {
		t.Fatal("deleted topic still configured")
	}
	if r := c.call(createTopicReq(dev.Broker.Config().BrokerClusterName, 1)); r.Code == protocol.Success {
		t.Fatal("created a topic named like the cluster")
	}
	if err := dev.Broker.Close(); err != nil {
		t.Fatal(err)
	}
	if _, code := routeOf(t, ns, AutoCreateTopicKey); code != protocol.TopicNotExist {
		t.Fatalf("route after the broker closed: %d", code)
	}
	dev.Namesrv.Close()
}
