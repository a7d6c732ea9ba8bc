package client

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	rmqconsumer "github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// silentLogger keeps the official client quiet in tests.
type silentLogger struct{}

func (silentLogger) Debug(string, map[string]interface{})   {}
func (silentLogger) Info(string, map[string]interface{})    {}
func (silentLogger) Warning(string, map[string]interface{}) {}
func (silentLogger) Error(string, map[string]interface{})   {}
func (silentLogger) Fatal(string, map[string]interface{})   {}
func (silentLogger) Level(string)                           {}
func (silentLogger) OutputPath(string) error                { return nil }

func init() { rlog.SetLogger(silentLogger{}) }

// interopBody is message i's body: some bodies are large enough for the
// official producer to compress them (4 KiB and more).
func interopBody(i int) []byte {
	if i%10 == 0 {
		return bytes.Repeat([]byte(fmt.Sprintf("big-%d;", i)), 1000)
	}
	return []byte(fmt.Sprintf("msg-%d", i))
}

// TestInteropOurProducerOfficialConsumer: messages (single and batched)
// sent by this client reach the official Go client's push consumer with
// their body, tags, keys, properties and message id.
func TestInteropOurProducerOfficialConsumer(t *testing.T) {
	const n = 300
	c := startCluster(t, 1, nil)
	c.createTopic("interop-out", 4)
	p := newTestProducer(t, c, nil)
	ids := map[string]int{} // msg id → index
	for i := 0; i < n-50; i++ {
		res, err := p.Send(context.Background(), &Message{Topic: "interop-out", Body: interopBody(i), Tags: "tag" + fmt.Sprint(i%3),
			Keys: []string{fmt.Sprintf("k%d", i), "common"}, Properties: map[string]string{"index": fmt.Sprint(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids[res.MsgID] = i
	}
	var batch []*Message
	for i := n - 50; i < n; i++ {
		batch = append(batch, &Message{Topic: "interop-out", Body: interopBody(i), Tags: "tag" + fmt.Sprint(i%3),
			Keys: []string{fmt.Sprintf("k%d", i), "common"}, Properties: map[string]string{"index": fmt.Sprint(i)}})
	}
	res, err := p.SendBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	for j, r := range res {
		ids[r.MsgID] = n - 50 + j
	}

	var mu sync.Mutex
	got := map[int]bool{}
	var bad []string
	pc, err := rmq.NewPushConsumer(
		rmqconsumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
		rmqconsumer.WithGroupName("official-consumer"),
		rmqconsumer.WithInstance("interop-official-c"),
		rmqconsumer.WithConsumeFromWhere(rmqconsumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = pc.Subscribe("interop-out", rmqconsumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (rmqconsumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			i, ok := ids[m.MsgId]
			if !ok {
				bad = append(bad, "unknown id "+m.MsgId)
				continue
			}
			switch {
			case !bytes.Equal(m.Body, interopBody(i)):
				bad = append(bad, fmt.Sprintf("%d: body of %d bytes", i, len(m.Body)))
			case m.GetTags() != "tag"+fmt.Sprint(i%3):
				bad = append(bad, fmt.Sprintf("%d: tags %q", i, m.GetTags()))
			case m.GetKeys() != fmt.Sprintf("k%d common", i):
				bad = append(bad, fmt.Sprintf("%d: keys %q", i, m.GetKeys()))
			case m.GetProperty("index") != fmt.Sprint(i):
				bad = append(bad, fmt.Sprintf("%d: index property %q", i, m.GetProperty("index")))
			}
			got[i] = true
		}
		return rmqconsumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown()
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		k, b := len(got), len(bad)
		mu.Unlock()
		if b > 0 {
			t.Fatalf("official consumer saw: %s", strings.Join(bad, "; "))
		}
		if k == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("official consumer got %d of %d", k, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInteropOfficialProducerOurConsumer: messages sent by the official Go
// client (compressed bodies and a batch among them) reach this client's
// push consumer intact, with the official producer's message ids.
func TestInteropOfficialProducerOurConsumer(t *testing.T) {
	const n = 300
	c := startCluster(t, 1, nil)
	c.createTopic("interop-in", 4)
	op, err := rmq.NewProducer(
		rmqproducer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
		rmqproducer.WithGroupName("official-producer"),
		rmqproducer.WithInstanceName("interop-official-p"),
		rmqproducer.WithRetry(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	defer op.Shutdown()
	ids := map[string]int{}
	msg := func(i int) *primitive.Message {
		m := primitive.NewMessage("interop-in", interopBody(i))
		m.WithTag("tag" + fmt.Sprint(i%3))
		m.WithKeys([]string{fmt.Sprintf("k%d", i)})
		m.WithProperty("index", fmt.Sprint(i))
		return m
	}
	for i := 0; i < n-20; i++ {
		r, err := op.SendSync(context.Background(), msg(i))
		if err != nil {
			t.Fatal(err)
		}
		ids[r.MsgID] = i
	}
	var batch []*primitive.Message
	for i := n - 20; i < n; i++ {
		batch = append(batch, msg(i))
	}
	// The official Go producer gives batched messages no UNIQ_KEY: they
	// are known by their broker (offset) id.
	if _, err := op.SendSync(context.Background(), batch...); err != nil {
		t.Fatal(err)
	}
	if len(ids) != n-20 {
		t.Fatalf("%d distinct ids from the official producer", len(ids))
	}

	var mu sync.Mutex
	got := map[int]bool{}
	var bad []string
	pc := newTestPushConsumer(t, c, "our-consumer", func(_ context.Context, m *MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		i, ok := ids[m.MsgID]
		if !ok && m.MsgID == m.OffsetMsgID {
			fmt.Sscan(m.Property("index"), &i)
			ok = i >= n-20
		}
		switch {
		case !ok:
			bad = append(bad, "unknown id "+m.MsgID)
		case !bytes.Equal(m.Body, interopBody(i)):
			bad = append(bad, fmt.Sprintf("%d: body of %d bytes", i, len(m.Body)))
		case m.Tags != "tag"+fmt.Sprint(i%3) || len(m.Keys) != 1 || m.Keys[0] != fmt.Sprintf("k%d", i) || m.Property("index") != fmt.Sprint(i):
			bad = append(bad, fmt.Sprintf("%d: tags %q keys %q props %v", i, m.Tags, m.Keys, m.PropertyMap()))
		default:
			got[i] = true
		}
		return nil
	}, nil)
	pc.Subscribe("interop-in", "*")
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		k, b := len(got), len(bad)
		mu.Unlock()
		if b > 0 {
			t.Fatalf("our consumer saw: %s", strings.Join(bad, "; "))
		}
		if k == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("our consumer got %d of %d", k, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
