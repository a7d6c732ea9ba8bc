package namesrv

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// TestOfficialClientReadsRoutes registers brokers through our protocol
// package, then asks with rocketmq-client-go's own name-server code: its
// topic list and its route fetch (which parses brokerAddrs by hand) must
// read our JSON.
func TestOfficialClientReadsRoutes(t *testing.T) {
	rlog.SetLogLevel("error")
	srv := startServer(t, Options{})
	c := dial(t, srv.Addr())
	c.register(registration("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", 1, topicConfig("T", 4), topicConfig("TBW102", 8)))
	c.register(registration("DefaultCluster", "broker-a", 1, "127.0.0.1:10921", 1, topicConfig("T", 4)))
	c.register(registration("DefaultCluster", "broker-b", 0, "127.0.0.1:10931", 1, topicConfig("T", 2)))

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{srv.Addr()})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	tl, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tl.TopicList)
	if !slices.Equal(tl.TopicList, []string{"T", "TBW102"}) {
		t.Fatalf("topic list %v", tl.TopicList)
	}

	mqs, err := adm.FetchPublishMessageQueues(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	perBroker := map[string]int{}
	for _, mq := range mqs {
		perBroker[mq.BrokerName]++
	}
	if perBroker["broker-a"] != 4 || perBroker["broker-b"] != 2 || len(perBroker) != 2 {
		t.Fatalf("publish queues per broker %v (the client found no master address?)", perBroker)
	}

	clusters, err := adm.FetchClusterList("T")
	if err != nil || !slices.Equal(clusters, []string{"DefaultCluster"}) {
		t.Fatalf("cluster list %v %v", clusters, err)
	}

	if _, err := adm.FetchClusterList("no-such-topic"); !errors.Is(err, rmqerrors.ErrTopicNotExist) {
		t.Fatalf("unknown topic: %v", err)
	}
}
