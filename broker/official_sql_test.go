package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestOfficialClientSQL92: the official Go client's push consumer with a
// MessageSelector of type SQL92 receives exactly the messages whose
// properties and tag match, filtered on the broker (enablePropertyFilter).
func TestOfficialClientSQL92(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(),
		Broker: Config{MappedFileSizeCommitLog: 8 << 20, EnablePropertyFilter: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	runOfficialChild(t, "sql92", dev)
}

const officialSQLSelector = "n >= 10 AND color IN ('red', 'blue') AND TAGS <> 'skip'"

func officialSQLMessage(topic string, i int) *primitive.Message {
	m := primitive.NewMessage(topic, []byte("sql-"+strconv.Itoa(i)))
	m.WithProperty("n", strconv.Itoa(i))
	m.WithProperty("color", []string{"red", "green", "blue"}[i%3])
	tag := "keep"
	if i%5 == 0 {
		tag = "skip"
	}
	m.WithTag(tag)
	return m
}

func officialSQLMatches(i int) bool { return i >= 10 && i%3 != 1 && i%5 != 0 }

func officialSQLPhase(ns, brokerAddr string) error {
	const topic, queues, n, sentinels = "sql-topic", 8, 300, 4 * 8
	ctx := context.Background()
	if err := officialCreateTopic(ctx, ns, brokerAddr, topic, queues); err != nil {
		return err
	}
	p, err := newE2EProducer(ns, "sql-p")
	if err != nil {
		return err
	}
	defer p.Shutdown()
	want := 0
	for i := 0; i < n; i++ {
		if res, err := p.SendSync(ctx, officialSQLMessage(topic, i)); err != nil || res.Status != primitive.SendOK {
			return fmt.Errorf("send %d: %v %v", i, res, err)
		}
		if officialSQLMatches(i) {
			want++
		}
	}
	got := newKindCollector()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("sql-group"), consumer.WithInstance(instance("sql-group")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	sel := consumer.MessageSelector{Type: consumer.SQL92, Expression: officialSQLSelector}
	if err := pc.Subscribe(topic, sel, got.consume); err != nil {
		return err
	}
	if err := pc.Start(); err != nil {
		return err
	}
	defer pc.Shutdown()
	if err := waitUntil("every matching message", time.Minute, func() bool { c, _ := got.count("sql"); return c >= want }); err != nil {
		return err
	}
	// Matching sentinels on every queue, after everything else: once they
	// are in, whatever the broker let through before them is too.
	for i := 0; i < sentinels; i++ {
		m := officialSQLMessage(topic, 1002+i*15) // n >= 10, red (n%3 == 0), not a multiple of 5
		m.Body = []byte("end-" + strconv.Itoa(i))
		if res, err := p.SendSync(ctx, m); err != nil || res.Status != primitive.SendOK {
			return fmt.Errorf("sentinel %d: %v %v", i, res, err)
		}
	}
	if err := waitUntil("the sentinels", time.Minute, func() bool { c, _ := got.count("end"); return c == sentinels }); err != nil {
		return err
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for b, times := range got.bodies {
		var i int
		if _, err := fmt.Sscanf(b, "sql-%d", &i); err != nil {
			continue // a sentinel
		}
		if !officialSQLMatches(i) {
			return fmt.Errorf("received %s, which %q does not select", b, officialSQLSelector)
		}
		if times != 1 {
			return fmt.Errorf("received %s %d times", b, times)
		}
	}
	return nil
}
