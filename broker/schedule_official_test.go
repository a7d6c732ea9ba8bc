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

// TestOfficialClientDelayAndRetry: with the default delay table, the
// official Go client's DELAY level 2 message arrives no sooner than 5 s
// after it was sent, and a message its push consumer answers
// ConsumeRetryLater (CONSUMER_SEND_MSG_BACK, level 0 → 3) comes back no
// sooner than 10 s later, through %RETRY%group; a TIMER_DELAY_MS=3000
// message arrives no sooner than 3 s. Runs ~12 s.
func TestOfficialClientDelayAndRetry(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(), Broker: Config{MappedFileSizeCommitLog: 8 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	start := time.Now()
	cmd, out := startOfficialChild(t, "delay", dev)
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "OK") {
		t.Fatalf("official client: %v\n%s", err, out)
	}
	t.Logf("%s(child ran %v)", out, time.Since(start))
}

// officialDelayPhase is the child side of TestOfficialClientDelayAndRetry.
func officialDelayPhase(ns, brokerAddr string) error {
	const topic, group = "dly", "dly-g"
	ctx := context.Background()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		return err
	}
	err = adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(brokerAddr),
		admin.WithReadQueueNums(1), admin.WithWriteQueueNums(1))
	if err == nil {
		// The broker makes the retry topic at the group's first heartbeat,
		// after the client's first route lookup; the client would find it
		// only at its next route refresh (30 s). Made here, it is routed
		// at once.
		err = adm.CreateTopic(ctx, admin.WithTopicCreate("%RETRY%"+group), admin.WithBrokerAddrCreate(brokerAddr),
			admin.WithReadQueueNums(1), admin.WithWriteQueueNums(1))
	}
	adm.Close()
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	var mu sync.Mutex
	seen := map[string][]time.Time{}
	done := make(chan struct{})
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(group), consumer.WithInstance(instance(group)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	err = pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		result := consumer.ConsumeSuccess
		for _, m := range msgs {
			b := string(m.Body)
			seen[b] = append(seen[b], time.Now())
			if b == "retry" && len(seen[b]) == 1 {
				result = consumer.ConsumeRetryLater
			}
		}
		if len(seen["delayed"]) >= 1 && len(seen["retry"]) >= 2 && len(seen["timer"]) >= 1 {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return result, nil
	})
	if err != nil {
		return err
	}
	if err := pc.Start(); err != nil {
		return err
	}
	defer pc.Shutdown()
	p, err := newE2EProducer(ns, "dly-p")
	if err != nil {
		return err
	}
	defer p.Shutdown()
	d := primitive.NewMessage(topic, []byte("delayed"))
	d.WithDelayTimeLevel(2)
	sent := time.Now()
	if _, err := p.SendSync(ctx, d); err != nil {
		return err
	}
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("retry"))); err != nil {
		return err
	}
	tm := primitive.NewMessage(topic, []byte("timer"))
	tm.WithProperty("TIMER_DELAY_MS", "3000") // RocketMQ 5's timer property, set by hand: the 4.x client has no API for it
	timerSent := time.Now()
	if _, err := p.SendSync(ctx, tm); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("after 90 s: deliveries %v", seen)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen["delayed"][0].Sub(sent); got < 5*time.Second-50*time.Millisecond {
		return fmt.Errorf("delay level 2 arrived %v after the send, before 5 s", got)
	}
	if gap := seen["retry"][1].Sub(seen["retry"][0]); gap < 10*time.Second-50*time.Millisecond {
		return fmt.Errorf("retry-later came back after %v, before 10 s", gap)
	}
	if got := seen["timer"][0].Sub(timerSent); got < 3*time.Second-50*time.Millisecond {
		return fmt.Errorf("a 3 s timer arrived after %v", got)
	}
	fmt.Printf("delay level 2 after %v; retry after %v; 3 s timer after %v\n", seen["delayed"][0].Sub(sent),
		seen["retry"][1].Sub(seen["retry"][0]), seen["timer"][0].Sub(timerSent))
	return nil
}
