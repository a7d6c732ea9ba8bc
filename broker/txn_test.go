package broker

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// txnPeer is a raw producer connection that answers nothing by itself and
// records the CHECK_TRANSACTION_STATE requests the broker sends it.
type txnPeer struct {
	t      *testing.T
	nc     net.Conn
	mu     sync.Mutex
	opaque int32
	resp   chan *protocol.Command
	checks chan *protocol.Command
}

func dialTxnPeer(t *testing.T, addr string) *txnPeer {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &txnPeer{t: t, nc: nc, resp: make(chan *protocol.Command, 16), checks: make(chan *protocol.Command, 64)}
	t.Cleanup(func() { nc.Close() })
	go func() {
		br := bufio.NewReader(nc)
		for {
			cmd, err := protocol.ReadCommand(br, 64<<20, nil)
			if err != nil {
				return
			}
			switch {
			case cmd.IsResponse():
				p.resp <- cmd
			case cmd.Code == protocol.CheckTransactionState:
				p.checks <- cmd
			}
		}
	}()
	return p
}

// call sends req and waits for its answer (one call at a time).
func (p *txnPeer) call(req *protocol.Command) *protocol.Command {
	p.t.Helper()
	p.mu.Lock()
	p.opaque++
	req.Opaque = p.opaque
	frame, err := protocol.AppendCommand(nil, req)
	if err == nil {
		_, err = p.nc.Write(frame)
	}
	p.mu.Unlock()
	if err != nil {
		p.t.Fatal(err)
	}
	select {
	case r := <-p.resp:
		return r
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no answer to %s", req)
	}
	return nil
}

// joinGroup heartbeats as a member of producer group pg.
func (p *txnPeer) joinGroup() {
	p.t.Helper()
	hb, _ := protocol.MarshalBody(protocol.HeartbeatData{ClientID: "p1", ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}}})
	if r := p.call(protocol.NewRequest(protocol.HeartBeat, nil, hb)); r.Code != protocol.Success {
		p.t.Fatal(r)
	}
}

// halfSend is a prepared send of group pg to topic/queue.
func halfSend(topic string, queue int32, body string) *protocol.Command {
	p, _ := record.EncodeProperties(map[string]string{txn.PropTranPrepared: "true", txn.PropProducerGroup: "pg", propUniqKey: "u-" + body})
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, QueueID: queue, SysFlag: record.TransactionPrepared, BornTimestamp: time.Now().UnixMilli(),
		Properties: string(p)}
	return protocol.NewRequest(protocol.SendMessage, h.Encode(), []byte(body))
}

// halfOf reads a prepared send's answer: half queue offset and commit-log
// offset (from the offsetMsgId).
func halfOf(t *testing.T, r *protocol.Command) (k, phys int64) {
	t.Helper()
	if r.Code != protocol.Success {
		t.Fatalf("prepared send: %s", r)
	}
	id := r.ExtFields["msgId"]
	phys, err := strconv.ParseInt(id[16:32], 16, 64)
	if err != nil {
		t.Fatalf("msgId %q: %v", id, err)
	}
	return ext64(t, r, "queueOffset"), phys
}

func endReq(k, phys int64, how int32, group string) *protocol.Command {
	h := protocol.EndTransactionRequestHeader{ProducerGroup: group, TranStateTableOffset: k, CommitLogOffset: phys,
		CommitOrRollback: how, MsgID: "m"}
	return protocol.NewRequest(protocol.EndTransaction, h.Encode(), nil)
}

// realBodies pulls every message of topic/queue.
func realBodies(t *testing.T, c *txnPeer, topic string, queue int32) []string {
	t.Helper()
	var out []string
	r := c.call(pullReq("g", topic, queue, 0, 32, 0, "*"))
	if r.Code != protocol.Success {
		return nil
	}
	for _, rec := range decodeRecords(t, r.Body) {
		if _, ok := record.LookupProperty(rec.Properties, propRealTopic); ok {
			t.Errorf("a delivered message keeps %s", propRealTopic)
		}
		out = append(out, string(rec.Body))
	}
	return out
}

// TestTxnCommitOnceRollbackNever: a half message is invisible in its real
// topic; a commit delivers it once however often it is repeated, also
// after a restart; a rollback never delivers; a commit from another
// producer group is refused.
func TestTxnCommitOnceRollbackNever(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, nil)
	c := dialTxnPeer(t, b.Addr())
	if r := c.call(createTopicReq("tx", 1)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	k1, p1 := halfOf(t, c.call(halfSend("tx", 0, "one")))
	k2, p2 := halfOf(t, c.call(halfSend("tx", 0, "two")))
	k3, p3 := halfOf(t, c.call(halfSend("tx", 0, "three")))
	if got := b.store.MaxQueueOffset("tx", 0); got != 0 {
		t.Fatalf("real queue holds %d before any commit", got)
	}
	if r := c.call(endReq(k1, p1, protocol.TransactionCommit, "other")); r.Code == protocol.Success {
		t.Fatalf("commit by another group: %s", r)
	}
	for i := 0; i < 3; i++ {
		if r := c.call(endReq(k1, p1, protocol.TransactionCommit, "pg")); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	if r := c.call(endReq(k2, p2, protocol.TransactionRollback, "pg")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if r := c.call(endReq(k2, p2, protocol.TransactionCommit, "pg")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("tx", 0) >= 1 }, "commit dispatched")
	if got := realBodies(t, c, "tx", 0); len(got) != 1 || got[0] != "one" {
		t.Fatalf("delivered %q, want [one]", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, dir, nil)
	defer b.Close()
	c = dialTxnPeer(t, b.Addr())
	for _, r := range []*protocol.Command{endReq(k1, p1, protocol.TransactionCommit, "pg"), endReq(k2, p2, protocol.TransactionCommit, "pg"),
		endReq(k3, p3, protocol.TransactionCommit, "pg"), endReq(k3, p3, protocol.TransactionCommit, "pg")} {
		if r := c.call(r); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("tx", 0) >= 2 }, "commit dispatched")
	if got := realBodies(t, c, "tx", 0); len(got) != 2 || got[0] != "one" || got[1] != "three" {
		t.Fatalf("after a restart delivered %q, want [one three]", got)
	}
}

// TestTxnCheckBack: an open half older than transactionTimeout is checked
// back with its producer group's live member, at most transactionCheckMax
// times, then discarded to TRANS_CHECK_MAX_TIME_TOPIC; one answered by a
// commit is delivered once and checked no more.
func TestTxnCheckBack(t *testing.T) {
	b := startBroker(t, "", func(c *Config) {
		c.TransactionCheckInterval = 20 * time.Millisecond
		c.TransactionTimeout = 50 * time.Millisecond
		c.TransactionCheckMax = 3
	})
	defer b.Close()
	c := dialTxnPeer(t, b.Addr())
	c.joinGroup()
	kc, _ := halfOf(t, c.call(halfSend("tx", 0, "commit-me")))
	kd, _ := halfOf(t, c.call(halfSend("tx", 0, "drop-me")))
	checked := map[int64]int{}
	deadline := time.After(20 * time.Second)
	for checked[kd] < 3 {
		select {
		case req := <-c.checks:
			var h protocol.CheckTransactionStateRequestHeader
			if err := h.Decode(req.ExtFields); err != nil {
				t.Fatal(err)
			}
			checked[h.TranStateTableOffset]++
			var rec record.Record
			if err := record.DecodeUnchecked(req.Body, &rec); err != nil || string(rec.Topic) != "tx" {
				t.Fatalf("check body: topic %q, err %v", rec.Topic, err)
			}
			if h.TranStateTableOffset == kc && checked[kc] == 2 {
				e := endReq(h.TranStateTableOffset, h.CommitLogOffset, protocol.TransactionCommit, "pg")
				e.ExtFields["fromTransactionCheck"] = "true"
				if r := c.call(e); r.Code != protocol.Success {
					t.Fatal(r)
				}
			}
		case <-deadline:
			t.Fatalf("checks so far %v", checked)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset(TransCheckMaxTimeTopic, 0) == 1 }, "discarded half")
	waitFor(t, func() bool { off, _ := b.offsets.Query(transProgressGroup, TransHalfTopic, 0); return off == kd+1 }, "progress past both")
	// A check of the committed one may have left before its commit was
	// applied: 2 or 3.
	if checked[kc] < 2 || checked[kc] > 3 || checked[kd] != 3 {
		t.Fatalf("checks %v: want 2 (or 3) for the committed, 3 for the discarded", checked)
	}
	if got := realBodies(t, c, "tx", 0); len(got) != 1 || got[0] != "commit-me" {
		t.Fatalf("delivered %q", got)
	}
}

// TestTxnReplicated: half, final and op records reach a SYNC_MASTER's
// slave like any records (the END_TRANSACTION answer waits for them); the
// slave settles nothing itself and runs no check service.
func TestTxnReplicated(t *testing.T) {
	dev := startReplicated(t, SyncMaster, func(c *Config) {
		c.TransactionCheckInterval = 20 * time.Millisecond
		c.TransactionTimeout = 50 * time.Millisecond
	})
	m, s := dev.Broker, dev.Slaves[0]
	c := dialTxnPeer(t, m.Addr())
	if r := c.call(createTopicReq("tx", 1)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	k, p := halfOf(t, c.call(halfSend("tx", 0, "replicated")))
	if r := c.call(endReq(k, p, protocol.TransactionCommit, "pg")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	waitFor(t, func() bool {
		return s.store.MaxQueueOffset(TransHalfTopic, 0) == 1 && s.store.MaxQueueOffset(TransOpHalfTopic, 0) == 1 &&
			s.store.MaxQueueOffset("tx", 0) == 1
	}, "half, op and final records on the slave")
	if s.txn != nil {
		t.Fatal("the slave keeps transaction state")
	}
	sc := dialTxnPeer(t, s.Addr())
	if r := sc.call(endReq(k, p, protocol.TransactionCommit, "pg")); r.Code != protocol.SlaveNotAvailable {
		t.Fatalf("END_TRANSACTION to a slave: %s", r)
	}
	if r := sc.call(halfSend("tx", 0, "to-slave")); r.Code != protocol.ServiceNotAvailable {
		t.Fatalf("prepared send to a slave: %s", r)
	}
}
