package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// The official client's transaction scenario: message i's local
// transaction answers by i%4 — 0 commit, 1 rollback, 2 unknown and the
// check-back says commit, 3 unknown and the check-back says rollback.
const (
	offTxnTopic = "otx"
	offTxnGroup = "otx-pg"
	offTxnN     = 12
)

type offTxnListener struct {
	mu      sync.Mutex
	checked map[string]int
	open    bool // the "open" phase: every answer is unknown
}

func offTxnIdx(m *primitive.Message) int {
	i, _ := strconv.Atoi(m.GetProperty("idx"))
	return i
}

func (l *offTxnListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	i := offTxnIdx(m)
	switch {
	case l.open || i%4 >= 2:
		return primitive.UnkonwnState
	case i%4 == 0:
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

func (l *offTxnListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checked[string(m.Body)]++
	l.mu.Unlock()
	if l.open {
		return primitive.UnkonwnState
	}
	if offTxnIdx(&m.Message)%2 == 0 {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

// TestOfficialClientTransactions: with the official client's transaction
// producer, a committed message is delivered once, a rolled-back one
// never, an unknown one is checked back and then delivered or dropped as
// the checker says; and half messages left open across a broker restart
// are checked back by the restarted broker and resolved the same way.
func TestOfficialClientTransactions(t *testing.T) {
	dir := t.TempDir()
	devOpts := clusterOptions{Dir: dir, Logger: quietLogger(), Broker: Config{MappedFileSizeCommitLog: 8 << 20,
		TransactionCheckInterval: 100 * time.Millisecond, TransactionTimeout: 300 * time.Millisecond,
		TransactionCheckMax: 1000}} // rounds before the child's producer is online count too
	dev, err := startCluster(devOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { dev.Close() }()
	runOfficialChild(t, "txn", dev)

	// Open half messages across a restart: the first child leaves them
	// unknown (and its broker checks nothing: the timeout is an hour),
	// the second resolves them after the restart.
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	open := devOpts
	open.Dir = t.TempDir()
	open.Broker.TransactionTimeout = time.Hour
	if dev, err = startCluster(open); err != nil {
		t.Fatal(err)
	}
	runOfficialChild(t, "txn-open", dev)
	// Acknowledged sends are indexed in the background: wait for them.
	waitFor(t, func() bool { return dev.Broker.store.MaxQueueOffset(TransHalfTopic, 0) >= offTxnN }, "the half messages indexed")
	if n := dev.Broker.store.MaxQueueOffset(TransHalfTopic, 0); n != offTxnN {
		t.Fatalf("%d half messages, want %d", n, offTxnN)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	open.Broker.TransactionTimeout = 300 * time.Millisecond
	if dev, err = startCluster(open); err != nil {
		t.Fatal(err)
	}
	runOfficialChild(t, "txn-resolve", dev)
}

// officialTxnChild runs the transaction phases in the child.
func officialTxnChild(ns, phase string) error {
	ctx := context.Background()
	l := &offTxnListener{checked: map[string]int{}, open: phase == "txn-open"}
	p, err := rocketmq.NewTransactionProducer(l, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(offTxnGroup), producer.WithInstanceName(instance("otx")), producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown()
	want := map[string]bool{}
	if phase != "txn-resolve" {
		for i := 0; i < offTxnN; i++ {
			m := primitive.NewMessage(offTxnTopic, []byte(fmt.Sprintf("otx-%02d", i)))
			m.WithProperty("idx", strconv.Itoa(i))
			res, err := p.SendMessageInTransaction(ctx, m)
			if err != nil {
				return fmt.Errorf("transaction %d: %w", i, err)
			}
			if res.Status != primitive.SendOK {
				return fmt.Errorf("transaction %d: %v", i, res.Status)
			}
			if phase == "txn" && (i%4 == 0 || i%4 == 2) {
				want[string(m.Body)] = true
			}
		}
	}
	if phase == "txn-open" {
		return nil
	}
	if phase == "txn-resolve" {
		// A send teaches the producer the broker's route and makes it
		// heartbeat, so the restarted broker knows whom to ask.
		m := primitive.NewMessage(offTxnTopic, []byte("otx-kick"))
		m.WithProperty("idx", "0")
		if _, err := p.SendMessageInTransaction(ctx, m); err != nil {
			return err
		}
		want["otx-kick"] = true
		for i := 0; i < offTxnN; i += 2 {
			want[fmt.Sprintf("otx-%02d", i)] = true
		}
	}
	c := &collector{}
	pc, err := startPushConsumer(ns, "otx-cg-"+phase, offTxnTopic, false, c)
	if err != nil {
		return err
	}
	defer pc.Shutdown()
	if err := waitCollected(phase, c, int64(len(want))); err != nil {
		return err
	}
	// Every unknown one has been checked back and settled: nothing more
	// may arrive.
	deadline := time.Now().Add(time.Minute)
	for {
		l.mu.Lock()
		n := 0
		for body := range l.checked {
			if strings.HasPrefix(body, "otx-") {
				n++
			}
		}
		l.mu.Unlock()
		if (phase == "txn" && n >= offTxnN/2) || (phase == "txn-resolve" && n >= offTxnN) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d messages checked back", phase, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	got := map[string]int{}
	for _, m := range c.snapshot() {
		got[m.body]++
	}
	for body, n := range got {
		if !want[body] || n != 1 {
			return fmt.Errorf("%s: %s delivered %d times (wanted: %v); all: %v", phase, body, n, want[body], got)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s: delivered %v, want %v", phase, got, want)
	}
	return nil
}
