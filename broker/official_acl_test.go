package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/samsamq/samsa/protocol"
)

// TestOfficialClientACL: the official RocketMQ Go client with
// primitive.Credentials produces and consumes against our name server and
// broker with ACL on (its signature form: SecurityToken sent, not signed);
// with a wrong secret key its sends fail. It runs in a child process, as
// the other official-client tests (official_test.go).
func TestOfficialClientACL(t *testing.T) {
	dev, _ := startACLDev(t)
	c := dialRaw(t, dev.BrokerAddr())
	if r := c.call(signed(createTopicReq("aclBoth", 4), aclAdminKey, aclAdminSecret)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	cmd, out := startOfficialChild(t, "acl", dev)
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "OK") {
		t.Fatalf("official client with ACL: %v\n%s", err, out)
	}
	puts := int64(0)
	for _, ts := range dev.Broker.stats.topicSnapshot() {
		if ts.Topic == "aclBoth" {
			puts = ts.Puts
		}
	}
	if puts != officialACLMessages {
		t.Fatalf("the broker stored %d messages, want %d", puts, officialACLMessages)
	}
	var denied int64
	for _, d := range dev.Broker.acl.denied.Snapshot() {
		denied += d.N
	}
	for _, d := range dev.Namesrv.ACLDenied() {
		denied += d.N
	}
	if denied == 0 {
		t.Fatal("the wrong secret key was not refused anywhere")
	}
	t.Logf("child: %s; refusals: broker %+v, name server %+v", strings.TrimSpace(out.String()), dev.Broker.acl.denied.Snapshot(), dev.Namesrv.ACLDenied())
}

const officialACLMessages = 50

func officialACLPhase(ns string) error {
	creds := primitive.Credentials{AccessKey: aclUserKey, SecretKey: aclUserSecret, SecurityToken: "token-1"}
	resolver := primitive.NewPassthroughResolver([]string{ns})
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver), producer.WithGroupName("acl-producer"),
		producer.WithInstanceName(instance("acl-producer")), producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second), producer.WithCredentials(creds))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	for i := range officialACLMessages {
		r, err := p.SendSync(context.Background(), primitive.NewMessage("aclBoth", []byte(fmt.Sprintf("acl-%d", i))))
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		if r.Status != primitive.SendOK {
			return fmt.Errorf("send %d: %v", i, r)
		}
	}
	p.Shutdown()

	var mu sync.Mutex
	got := map[string]bool{}
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver), consumer.WithGroupName("aclGroup"),
		consumer.WithInstance(instance("aclGroup")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithCredentials(creds))
	if err != nil {
		return err
	}
	err = pc.Subscribe("aclBoth", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		for _, m := range msgs {
			got[string(m.Body)] = true
		}
		mu.Unlock()
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return err
	}
	if err := pc.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == officialACLMessages {
			break
		}
		if time.Now().After(deadline) {
			pc.Shutdown()
			return fmt.Errorf("consumed %d of %d in 2 minutes", n, officialACLMessages)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pc.Shutdown()

	// A wrong secret key: the send must fail.
	bad := primitive.Credentials{AccessKey: aclUserKey, SecretKey: "not-the-secret"}
	bp, err := rocketmq.NewProducer(producer.WithNsResolver(resolver), producer.WithGroupName("acl-bad"),
		producer.WithInstanceName(instance("acl-bad")), producer.WithRetry(0),
		producer.WithSendMsgTimeout(5*time.Second), producer.WithCredentials(bad))
	if err != nil {
		return err
	}
	if err := bp.Start(); err != nil {
		return err
	}
	defer bp.Shutdown()
	r, err := bp.SendSync(context.Background(), primitive.NewMessage("aclBoth", []byte("must not be stored")))
	if err == nil && r.Status == primitive.SendOK {
		return errors.New("a send with a wrong secret key succeeded")
	}
	return nil
}
