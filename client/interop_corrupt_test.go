package client

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	rmqconsumer "github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

var long = flag.Bool("long", false, "run the long tests (the official client's fixed 10 s and 20 s waits)")

// sendAndCorrupt sends n messages to topic's one queue, stops the broker,
// flips a body byte of message victim in its segment file and restarts
// the broker.
func sendAndCorrupt(t *testing.T, c *testCluster, topic string, n, victim int) {
	t.Helper()
	c.createTopic(topic, 1)
	p := newTestProducer(t, c, nil)
	var phys int64
	for i := 0; i < n; i++ {
		r, err := p.Send(context.Background(), &Message{Topic: topic, Body: []byte(fmt.Sprintf("m-%02d-%0200d", i, i))})
		if err != nil {
			t.Fatal(err)
		}
		if i == victim {
			id := r.OffsetMsgID
			if phys, err = strconv.ParseInt(id[len(id)-16:], 16, 64); err != nil {
				t.Fatalf("offset msg id %q: %v", id, err)
			}
		}
	}
	c.stopBroker(0)
	seg := c.configs[0].MappedFileSizeCommitLog
	f, err := os.OpenFile(filepath.Join(c.configs[0].StorePathRootDir, "commitlog", fmt.Sprintf("%020d", phys/seg*seg)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	at := phys%seg + 120 // inside the body, which starts at byte 88
	f.ReadAt(b, at)
	b[0] ^= 0x20
	f.WriteAt(b, at)
	f.Close()
	c.restartBroker(0)
}

// TestInteropOfficialConsumerMovesPastCorruptRecord (-long): the official
// Go client's push consumer, answered PULL_OFFSET_MOVED at a corrupt
// record, continues from nextBeginOffset (after its fixed 10 s wait and
// the next rebalance) and gets every other message.
func TestInteropOfficialConsumerMovesPastCorruptRecord(t *testing.T) {
	if !*long {
		t.Skip("-long: the official client waits 10 s and up to a 20 s rebalance")
	}
	const topic, n, victim = "corrupt-official", 20, 7
	c := startCluster(t, 1, nil)
	sendAndCorrupt(t, c, topic, n, victim)
	var mu sync.Mutex
	seen := map[int]int{}
	pc, err := rmq.NewPushConsumer(
		rmqconsumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
		rmqconsumer.WithGroupName("official-corrupt"),
		rmqconsumer.WithInstance("official-corrupt-c"),
		rmqconsumer.WithConsumeFromWhere(rmqconsumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = pc.Subscribe(topic, rmqconsumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (rmqconsumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			i, _ := strconv.Atoi(string(m.Body[2:4]))
			seen[i]++
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
	deadline := time.Now().Add(90 * time.Second)
	for {
		mu.Lock()
		k := len(seen)
		mu.Unlock()
		if k >= n-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("official consumer handled %d distinct messages of %d", k, n-1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		if (i == victim) != (seen[i] == 0) {
			t.Errorf("message %d handled %d times", i, seen[i])
		}
	}
}
