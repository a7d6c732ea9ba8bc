package metascale

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// officialSends is how many topics of the run the official client sends
// to (a random sample, and the one it created).
const officialSends = 20

// Official is what the official RocketMQ Go client (apache/rocketmq-client-go)
// did against the broker once it held the run's topics: it created one
// more topic, listed them all (GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
// and sent to a sample of them, each send routed by the name server.
type Official struct {
	CreateMs  float64 `json:"create_ms"`
	ListMs    float64 `json:"list_ms"`
	Listed    int     `json:"listed"`
	Sends     int     `json:"sends"`
	SendP50Ms float64 `json:"send_p50_ms"`
	SendMaxMs float64 `json:"send_max_ms"`
}

// official runs the official client's phase against t, which holds s's
// topics.
func official(ctx context.Context, t Target, s Settings) (*Official, error) {
	rlog.SetLogLevel("error")
	ns := primitive.NewPassthroughResolver([]string{t.NamesrvAddr()})
	a, err := admin.NewAdmin(admin.WithResolver(ns))
	if err != nil {
		return nil, fmt.Errorf("official admin: %w", err)
	}
	defer func() { _ = a.Close() }()
	var o Official
	name := "ms-official"
	t0 := time.Now()
	if err := a.CreateTopic(ctx, admin.WithTopicCreate(name), admin.WithBrokerAddrCreate(t.BrokerAddr()),
		admin.WithReadQueueNums(s.QueuesPerTopic), admin.WithWriteQueueNums(s.QueuesPerTopic)); err != nil {
		return nil, fmt.Errorf("official client: create %s: %w", name, err)
	}
	o.CreateMs = msSince(t0)
	t0 = time.Now()
	list, err := a.FetchAllTopicList(ctx)
	if err != nil {
		return nil, fmt.Errorf("official client: list the topics: %w", err)
	}
	o.ListMs, o.Listed = msSince(t0), len(list.TopicList)
	if o.Listed < s.Topics+1 {
		return nil, fmt.Errorf("official client: listed %d topics, the broker holds %d", o.Listed, s.Topics+1)
	}
	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("ms-official"),
		producer.WithRetry(2), producer.WithSendMsgTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("official producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("official producer: start: %w", err)
	}
	defer func() { _ = p.Shutdown() }()
	rng := rand.New(rand.NewSource(2))
	topics := []string{name}
	for len(topics) < officialSends {
		topics = append(topics, topicName(rng.Intn(s.Topics)))
	}
	ms := make([]float64, 0, len(topics))
	for _, topic := range topics {
		t0 := time.Now()
		r, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("metadata-scale")))
		if err == nil && r.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", r.Status)
		}
		if err != nil {
			return nil, fmt.Errorf("official client: send to %s: %w", topic, err)
		}
		ms = append(ms, msSince(t0))
	}
	o.Sends = len(ms)
	o.SendP50Ms, o.SendMaxMs = median(ms), maxOf(ms)
	return &o, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1e3 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
