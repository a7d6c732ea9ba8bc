package broker

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestOfficialClientBigBatch: the official Go client sends a 5 MiB batch
// (five 1 MiB messages) as one request; the broker refuses it with
// MESSAGE_ILLEGAL and the client reports the remark; nothing is stored.
func TestOfficialClientBigBatch(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(), Broker: Config{MappedFileSizeCommitLog: 32 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	runOfficialChild(t, "bigbatch", dev)
	for q := int32(0); q < 8; q++ {
		// Acknowledged sends are indexed in the background: wait for them.
		waitFor(t, func() bool { return dev.Broker.store.MaxQueueOffset("big-batch", q) >= 1 }, "the small message indexed")
		if n := dev.Broker.store.MaxQueueOffset("big-batch", q); n != 1 {
			t.Errorf("queue %d holds %d messages, want the one small one", q, n)
		}
	}
}

func officialBigBatchPhase(ns, brokerAddr string) error {
	ctx := context.Background()
	if err := officialCreateTopic(ctx, ns, brokerAddr, "big-batch", 8); err != nil {
		return err
	}
	p, err := newE2EProducer(ns, "big-p")
	if err != nil {
		return err
	}
	defer p.Shutdown()
	var msgs []*primitive.Message
	for i := 0; i < 5; i++ {
		msgs = append(msgs, primitive.NewMessage("big-batch", bytes.Repeat([]byte{'a' + byte(i)}, 1<<20)))
	}
	res, err := p.SendSync(ctx, msgs...)
	if err == nil || !strings.Contains(err.Error(), "exceeds maxMessageSize") {
		return fmt.Errorf("5 MiB batch: %v, %v; want the broker's refusal", res, err)
	}
	// One small message to every queue, so the parent can count.
	for q := 0; q < 8; q++ {
		if r, err := p.SendSync(ctx, primitive.NewMessage("big-batch", []byte("small"))); err != nil || r.Status != primitive.SendOK {
			return fmt.Errorf("small message: %v %v", r, err)
		}
	}
	return nil
}
