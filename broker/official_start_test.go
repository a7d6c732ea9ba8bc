package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestOfficialClientStartPositions: with the official Go client, a new
// group from the last offset receives only what was sent after it
// started, one from a timestamp only what was stored at or after it
// (offsets/start.go; the client computes both from QUERY_NOT_FOUND,
// GET_MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP).
func TestOfficialClientStartPositions(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(), Broker: Config{MappedFileSizeCommitLog: 8 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	runOfficialChild(t, "start", dev)
}

// kindCollector records the bodies received ("kind-i") and the queues
// they came from.
type kindCollector struct {
	mu     sync.Mutex
	bodies map[string]int
	queues map[int]bool
}

func newKindCollector() *kindCollector {
	return &kindCollector{bodies: map[string]int{}, queues: map[int]bool{}}
}

func (c *kindCollector) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.bodies[string(m.Body)]++
		c.queues[m.Queue.QueueId] = true
	}
	return consumer.ConsumeSuccess, nil
}

// count returns how many distinct bodies of kind arrived, and the bodies
// of other kinds than allowed.
func (c *kindCollector) count(kind string, allowed ...string) (n int, bad []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := range c.bodies {
		k, _, _ := strings.Cut(b, "-")
		if k == kind {
			n++
		}
		ok := k == kind
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			bad = append(bad, b)
		}
	}
	return n, bad
}

func (c *kindCollector) queueCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queues)
}

func officialCreateTopic(ctx context.Context, ns, brokerAddr, topic string, queues int) error {
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		return err
	}
	defer adm.Close()
	err = adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(brokerAddr),
		admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues))
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func waitUntil(what string, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func officialStartPhase(ns, brokerAddr string) error {
	const topic, queues, perKind = "start-pos", 8, 32
	ctx := context.Background()
	if err := officialCreateTopic(ctx, ns, brokerAddr, topic, queues); err != nil {
		return err
	}
	p, err := newE2EProducer(ns, "start-p")
	if err != nil {
		return err
	}
	defer p.Shutdown()
	send := func(kind string, i int) error {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", kind, i))))
		if err != nil || res.Status != primitive.SendOK {
			return fmt.Errorf("send %s-%d: %v %v", kind, i, res, err)
		}
		return nil
	}
	for i := 0; i < perKind; i++ {
		if err := send("before", i); err != nil {
			return err
		}
	}
	// The client's ConsumeTimestamp has whole seconds (yyyyMMddHHmmss,
	// which the Go client parses as UTC): the mark is the next second.
	mark := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(mark) + time.Millisecond)
	for i := 0; i < perKind; i++ {
		if err := send("mid", i); err != nil {
			return err
		}
	}

	start := func(group string, opts ...consumer.Option) (rocketmq.PushConsumer, *kindCollector, error) {
		c := newKindCollector()
		opts = append(opts, consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
			consumer.WithGroupName(group), consumer.WithInstance(instance(group)))
		pc, err := rocketmq.NewPushConsumer(opts...)
		if err != nil {
			return nil, nil, err
		}
		if err := pc.Subscribe(topic, consumer.MessageSelector{}, c.consume); err != nil {
			return nil, nil, err
		}
		return pc, c, pc.Start()
	}
	pl, last, err := start("start-last", consumer.WithConsumeFromWhere(consumer.ConsumeFromLastOffset))
	if err != nil {
		return err
	}
	defer pl.Shutdown()
	ps, stamp, err := start("start-ts", consumer.WithConsumeFromWhere(consumer.ConsumeFromTimestamp),
		consumer.WithConsumeTimestamp(mark.UTC().Format("20060102150405")))
	if err != nil {
		return err
	}
	defer ps.Shutdown()

	// Probe until the last-offset group has received from every queue:
	// each queue's start offset was computed before its first message.
	for i := 0; last.queueCount() < queues; i++ {
		if i > 3000 {
			return fmt.Errorf("last-offset group received from %d of %d queues", last.queueCount(), queues)
		}
		if err := send("probe", i); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < perKind; i++ {
		if err := send("after", i); err != nil {
			return err
		}
	}
	err = waitUntil("last-offset group gets every later message", time.Minute, func() bool {
		n, _ := last.count("after", "probe")
		return n == perKind
	})
	if err != nil {
		return err
	}
	err = waitUntil("timestamp group gets every message from the mark on", time.Minute, func() bool {
		mid, _ := stamp.count("mid", "after", "probe")
		after, _ := stamp.count("after", "mid", "probe")
		return mid == perKind && after == perKind
	})
	if err != nil {
		return err
	}
	if _, bad := last.count("after", "probe"); len(bad) > 0 {
		return fmt.Errorf("last-offset group received %d messages sent before it started, e.g. %q", len(bad), bad[0])
	}
	if _, bad := stamp.count("mid", "after", "probe"); len(bad) > 0 {
		return fmt.Errorf("timestamp group received %d messages stored before its timestamp, e.g. %q", len(bad), bad[0])
	}
	return nil
}
