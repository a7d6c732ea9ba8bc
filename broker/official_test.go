package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/samsamq/samsa/protocol"
)

// sentMsg is what the producer sent, and where the broker put it.
type sentMsg struct {
	body, key, tag, idx string
	queue               int
	offset              int64
}

// gotMsg is what a consumer received.
type gotMsg struct {
	body, key, tag, idx string
	queue               int
	offset              int64
}

type collector struct {
	mu   sync.Mutex
	msgs []gotMsg
	n    atomic.Int64
}

func (c *collector) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	for _, m := range msgs {
		c.msgs = append(c.msgs, gotMsg{body: string(m.Body), key: m.GetKeys(), tag: m.GetTags(), idx: m.GetProperty("idx"),
			queue: m.Queue.QueueId, offset: m.QueueOffset})
	}
	c.mu.Unlock()
	c.n.Add(int64(len(msgs)))
	return consumer.ConsumeSuccess, nil
}

func (c *collector) snapshot() []gotMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]gotMsg(nil), c.msgs...)
}

var instanceSeq atomic.Int64

func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), instanceSeq.Add(1))
}

func startPushConsumer(ns, group, topic string, orderly bool, c *collector) (rocketmq.PushConsumer, error) {
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(orderly),
		consumer.WithConsumeMessageBatchMaxSize(16),
	)
	if err != nil {
		return nil, err
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, c.consume); err != nil {
		return nil, err
	}
	return pc, pc.Start()
}

// The official-client scenario's sizes.
const (
	e2eTopic   = "e2e"
	e2eQueues  = 8
	e2eSingles = 4000
	e2eBatches = 120
	e2ePerBat  = 50
	e2eTotal   = e2eSingles + e2eBatches*e2ePerBat
	e2eGroup   = "e2e-orderly"
)

// TestOfficialClientEndToEnd drives the official RocketMQ Go client against
// our name server and broker: a topic of 8 queues, 10,000 messages with
// keys, tags and properties sent one by one and in batches; an orderly push
// consumer (LOCK_BATCH_MQ) receives every one as sent and per queue in
// offset order; a second group from the first offset receives them all
// again; the first group's offsets survive a broker restart.
//
// The name server and broker run in this process (under -race in make
// test); the client runs in a child process, this test binary re-executed,
// because the official client has data races of its own (its orderly
// process queue reads a tree map without its lock) that would fail any test
// it runs in under -race. The child's race reports go to files and are
// ignored.
func TestOfficialClientEndToEnd(t *testing.T) {
	dir := t.TempDir()
	devOpts := clusterOptions{Dir: dir, Logger: quietLogger(), Broker: Config{MappedFileSizeCommitLog: 8 << 20}}
	dev, err := startCluster(devOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { dev.Close() }()
	runOfficialChild(t, "1", dev)

	// The consumer's last offsets travel one-way at its shutdown; wait
	// until the broker has them all, then restart it.
	b := dev.Broker
	waitFor(t, func() bool {
		sum := int64(0)
		for q := int32(0); q < e2eQueues; q++ {
			off, _ := b.offsets.Query(e2eGroup, e2eTopic, q)
			sum += off
		}
		return sum == e2eTotal
	}, "orderly group's offsets committed")
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if dev, err = startCluster(devOpts); err != nil {
		t.Fatal(err)
	}
	for q := int32(0); q < e2eQueues; q++ {
		if off, ok := dev.Broker.offsets.Query(e2eGroup, e2eTopic, q); !ok || off == 0 {
			t.Fatalf("queue %d: committed offset %d %v after restart", q, off, ok)
		}
	}
	runOfficialChild(t, "2", dev)
}

func runOfficialChild(t *testing.T, phase string, dev *testCluster) {
	t.Helper()
	cmd, raceDir := officialChildCmd(t, phase, dev)
	timer := time.AfterFunc(4*time.Minute, func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	if races, _ := os.ReadDir(raceDir); len(races) > 0 {
		t.Logf("phase %s: the official client's own data races were reported in the child (ignored)", phase)
	}
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("official client phase %s: %v\n%s", phase, err, out)
	}
}

// officialChildCmd is this test binary re-executed to run phase with the
// official client; its race reports go to files in raceDir.
func officialChildCmd(t *testing.T, phase string, dev *testCluster, env ...string) (cmd *exec.Cmd, raceDir string) {
	raceDir = t.TempDir()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=official", "SAMSA_OFFICIAL_PHASE="+phase,
		"SAMSA_NS="+dev.NamesrvAddr(), "SAMSA_BROKER_ADDR="+dev.BrokerAddr(),
		"GORACE=exitcode=0 log_path="+filepath.Join(raceDir, "race"))
	cmd.Env = append(cmd.Env, env...)
	return cmd, raceDir
}

// startOfficialChild starts phase in a child with extra environment; the
// caller waits for cmd (it is killed after 4 minutes) and reads out.
func startOfficialChild(t *testing.T, phase string, dev *testCluster, env ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd, _ := officialChildCmd(t, phase, dev, env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(4*time.Minute, func() { cmd.Process.Kill() })
	t.Cleanup(func() {
		timer.Stop()
		cmd.Process.Kill()
	})
	return cmd, out
}

// officialChild runs one phase of the scenario with the official client.
func officialChild() error {
	rlog.SetLogLevel("error")
	ns, brokerAddr := os.Getenv("SAMSA_NS"), os.Getenv("SAMSA_BROKER_ADDR")
	switch os.Getenv("SAMSA_OFFICIAL_PHASE") {
	case "1":
		return officialPhase1(ns, brokerAddr)
	case "2":
		return officialPhase2(ns)
	case "txn", "txn-open", "txn-resolve":
		return officialTxnChild(ns, os.Getenv("SAMSA_OFFICIAL_PHASE")) // official_txn_test.go
	case "start":
		return officialStartPhase(ns, brokerAddr)
	case "sql92":
		return officialSQLPhase(ns, brokerAddr)
	case "bigbatch":
		return officialBigBatchPhase(ns, brokerAddr)
	case "delay":
		return officialDelayPhase(ns, brokerAddr)
	case "tls":
		return officialTLSPhase(ns) // official_tls_test.go
	case "slave":
		n, _ := strconv.ParseInt(os.Getenv("SAMSA_SLAVE_N"), 10, 64)
		return officialSlavePhase(ns, n, os.Getenv("SAMSA_PROGRESS"))
	case "query":
		return officialQueryPhase(ns, os.Getenv("SAMSA_SENT"))
	case "acl":
		return officialACLPhase(ns) // official_acl_test.go
	}
	return fmt.Errorf("unknown phase %q", os.Getenv("SAMSA_OFFICIAL_PHASE"))
}

func e2eMessage(i int) *primitive.Message {
	m := primitive.NewMessage(e2eTopic, []byte(fmt.Sprintf("body-%05d", i)))
	m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
	m.WithTag([]string{"tagA", "tagB", "tagC"}[i%3])
	m.WithProperty("idx", strconv.Itoa(i))
	return m
}

func newE2EProducer(ns, name string) (rocketmq.Producer, error) {
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("e2e-producer"), producer.WithInstanceName(instance(name)), producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	return p, p.Start()
}

func waitCollected(name string, c *collector, n int64) error {
	deadline := time.Now().Add(2 * time.Minute)
	for c.n.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: received %d of %d in 2 minutes", name, c.n.Load(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func officialPhase1(ns, brokerAddr string) error {
	ctx := context.Background()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		return err
	}
	err = adm.CreateTopic(ctx, admin.WithTopicCreate(e2eTopic), admin.WithBrokerAddrCreate(brokerAddr),
		admin.WithReadQueueNums(e2eQueues), admin.WithWriteQueueNums(e2eQueues))
	adm.Close()
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	p, err := newE2EProducer(ns, "e2e-p")
	if err != nil {
		return err
	}
	defer p.Shutdown()
	sent := make(map[string]sentMsg, e2eTotal)
	note := func(i, q int, off int64) {
		m := e2eMessage(i)
		sent[string(m.Body)] = sentMsg{body: string(m.Body), key: m.GetKeys(), tag: m.GetTags(), idx: strconv.Itoa(i), queue: q, offset: off}
	}
	for i := 0; i < e2eSingles; i++ {
		res, err := p.SendSync(ctx, e2eMessage(i))
		if err != nil || res.Status != primitive.SendOK {
			return fmt.Errorf("send %d: %v %v", i, res, err)
		}
		note(i, res.MessageQueue.QueueId, res.QueueOffset)
	}
	for bi := 0; bi < e2eBatches; bi++ {
		base := e2eSingles + bi*e2ePerBat
		msgs := make([]*primitive.Message, e2ePerBat)
		for j := range msgs {
			msgs[j] = e2eMessage(base + j)
		}
		res, err := p.SendSync(ctx, msgs...)
		if err != nil || res.Status != primitive.SendOK {
			return fmt.Errorf("batch %d: %v %v", bi, res, err)
		}
		for j := range msgs {
			note(base+j, res.MessageQueue.QueueId, res.QueueOffset+int64(j))
		}
	}
	if len(sent) != e2eTotal {
		return fmt.Errorf("sent %d distinct, want %d", len(sent), e2eTotal)
	}

	var ordered, again collector
	c1, err := startPushConsumer(ns, e2eGroup, e2eTopic, true, &ordered)
	if err != nil {
		return err
	}
	c2, err := startPushConsumer(ns, "e2e-again", e2eTopic, false, &again)
	if err != nil {
		return err
	}
	if err := waitCollected("orderly group", &ordered, e2eTotal); err != nil {
		return err
	}
	if err := waitCollected("second group", &again, e2eTotal); err != nil {
		return err
	}
	if err := checkReceived("orderly group", sent, ordered.snapshot(), true); err != nil {
		return err
	}
	if err := checkReceived("second group", sent, again.snapshot(), false); err != nil {
		return err
	}
	// The official orderly consumer commits an offset only after the
	// callback that counted the message returns, and sends its offsets
	// to the broker every 5 s and once more at shutdown: shutting down
	// right after the last callback can send a stale table. Wait until
	// the broker holds every offset, so phase 2 starts from the end.
	if err := waitBrokerOffsets(brokerAddr, e2eGroup, e2eTopic, e2eTotal); err != nil {
		return err
	}
	c2.Shutdown()
	return c1.Shutdown()
}

// waitBrokerOffsets polls QUERY_CONSUMER_OFFSET until the group's
// committed offsets over all queues sum to want, for up to 30 s.
func waitBrokerOffsets(addr, group, topic string, want int64) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	query := func(q int32) (int64, error) {
		h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: q}
		req := protocol.NewRequest(protocol.QueryConsumerOffset, h.Encode(), nil)
		req.Opaque = q + 1
		frame, err := protocol.AppendCommand(nil, req)
		if err != nil {
			return 0, err
		}
		if _, err := nc.Write(frame); err != nil {
			return 0, err
		}
		resp, err := protocol.ReadCommand(br, 16<<20, nil)
		if err != nil {
			return 0, err
		}
		if resp.Code != protocol.Success {
			return 0, nil // not committed yet
		}
		return strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sum := int64(0)
		for q := int32(0); q < e2eQueues; q++ {
			off, err := query(q)
			if err != nil {
				return fmt.Errorf("query offset of queue %d: %w", q, err)
			}
			sum += off
		}
		if sum == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: broker holds offsets summing to %d of %d after 30 s", group, sum, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkReceived: every sent message once, exactly as sent (body, keys,
// tag, property, queue, offset), and with orderly, each queue in offset
// order from 0.
func checkReceived(name string, sent map[string]sentMsg, got []gotMsg, orderly bool) error {
	seen := make(map[string]bool, len(got))
	next := make(map[int]int64)
	for _, g := range got {
		s, ok := sent[g.body]
		if !ok {
			return fmt.Errorf("%s: received %q, never sent", name, g.body)
		}
		if seen[g.body] {
			return fmt.Errorf("%s: %q received twice", name, g.body)
		}
		seen[g.body] = true
		if g.key != s.key || g.tag != s.tag || g.idx != s.idx || g.queue != s.queue || g.offset != s.offset {
			return fmt.Errorf("%s: received %+v, sent %+v", name, g, s)
		}
		if orderly {
			if g.offset != next[g.queue] {
				return fmt.Errorf("%s: queue %d delivered offset %d, want %d", name, g.queue, g.offset, next[g.queue])
			}
			next[g.queue]++
		}
	}
	if len(seen) != len(sent) {
		return fmt.Errorf("%s: received %d of %d", name, len(seen), len(sent))
	}
	return nil
}

// officialPhase2 runs after the broker restarted: the orderly group resumes
// from its committed offsets and sees only new messages.
func officialPhase2(ns string) error {
	var after collector
	c, err := startPushConsumer(ns, e2eGroup, e2eTopic, true, &after)
	if err != nil {
		return err
	}
	defer c.Shutdown()
	p, err := newE2EProducer(ns, "e2e-p2")
	if err != nil {
		return err
	}
	defer p.Shutdown()
	newQueues := make(map[int]bool)
	for i := 0; i < 10; i++ {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(e2eTopic, []byte(fmt.Sprintf("new-%d", i))))
		if err != nil || res.Status != primitive.SendOK {
			return fmt.Errorf("send after restart: %v %v", res, err)
		}
		newQueues[res.MessageQueue.QueueId] = true
	}
	if len(newQueues) != e2eQueues {
		return fmt.Errorf("new messages went to %d queues, want all %d", len(newQueues), e2eQueues)
	}
	// The orderly consumer delivers each queue in offset order and every
	// queue got a new message: once all ten are in, an old message that
	// was going to be redelivered would have come first.
	if err := waitCollected("after restart", &after, 10); err != nil {
		return err
	}
	for _, g := range after.snapshot() {
		if !strings.HasPrefix(g.body, "new-") {
			return fmt.Errorf("after restart the group received old message %q", g.body)
		}
	}
	if n := after.n.Load(); n != 10 {
		return fmt.Errorf("after restart received %d, want 10", n)
	}
	return nil
}
