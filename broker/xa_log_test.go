package broker

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

// xaTestBranch starts a branch on the cluster's broker, sends n messages
// in it and ends it.
func xaTestBranch(t *testing.T, res *client.XAResource, topic string, x client.XID, n int) {
	t.Helper()
	ctx := context.Background()
	if err := res.Start(ctx, x, client.TMNoFlags); err != nil {
		t.Fatalf("start: %v", err)
	}
	for i := 0; i < n; i++ {
		// A SYNC_MASTER without a slave stores the half and answers
		// SLAVE_NOT_AVAILABLE: the resource still lists it.
		if r, err := res.Send(ctx, x, &client.Message{Topic: topic, Body: []byte(fmt.Sprintf("%s-%d", x.GTRID, i))}); r == nil {
			t.Fatalf("send: %v", err)
		}
	}
	if err := res.End(ctx, x, client.TMSuccess); err != nil {
		t.Fatalf("end: %v", err)
	}
}

func xaTestProducer(t *testing.T, ns string) *client.Producer {
	t.Helper()
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns},
		Logger: quietLogger(), RouteRefresh: 200 * time.Millisecond}, SendTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestXAPrepareWaitsForSlaves: a SYNC_MASTER with no slave cannot
// replicate the prepare record, so prepare answers XAER_RMFAIL, not
// XA_OK; the branch is then rolled back as its coordinator would.
func TestXAPrepareWaitsForSlaves(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(),
		Broker: Config{BrokerRole: SyncMaster, MappedFileSizeCommitLog: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	const topic = "xa-sync"
	if resp := dialRaw(t, dev.BrokerAddr()).call(createTopicReq(topic, 2)); resp.Code != protocol.Success {
		t.Fatalf("create topic: %s", resp)
	}
	res := xaTestProducer(t, dev.NamesrvAddr()).XAResource(DefaultBrokerName)
	x := client.XID{FormatID: 3, GTRID: []byte("no-slave")}
	xaTestBranch(t, res, topic, x, 2)
	if _, err := res.Prepare(context.Background(), x); !client.IsXACode(err, client.XAErrRMFail) {
		t.Fatalf("prepare on a SYNC_MASTER without a slave: %v, want XAER_RMFAIL", err)
	}
	if err := res.Rollback(context.Background(), x); err != nil {
		t.Fatalf("rollback after the failed prepare: %v", err)
	}
	if got := dev.Broker.xa.Recover(); len(got) != 0 {
		t.Fatalf("branches left: %+v", got)
	}
}

// TestXARestartRebuildsFromLog: a master restarted with its
// xaPrepared.json gone still has its prepared branch (from the branch
// records of its log); commit there delivers its messages once.
func TestXARestartRebuildsFromLog(t *testing.T) {
	dir := t.TempDir()
	dev, err := startCluster(clusterOptions{Dir: dir, Logger: quietLogger(), Broker: Config{MappedFileSizeCommitLog: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	const topic = "xa-restart"
	if resp := dialRaw(t, dev.BrokerAddr()).call(createTopicReq(topic, 2)); resp.Code != protocol.Success {
		t.Fatalf("create topic: %s", resp)
	}
	res := xaTestProducer(t, dev.NamesrvAddr()).XAResource(DefaultBrokerName)
	// A branch committed before: its records are below the floor the
	// sweep records, and the restart reads from that floor.
	y := client.XID{FormatID: 3, GTRID: []byte("before"), BQUAL: []byte("b")}
	xaTestBranch(t, res, topic, y, 1)
	if rc, err := res.Prepare(context.Background(), y); err != nil || rc != client.XAOK {
		t.Fatalf("prepare: %d %v", rc, err)
	}
	if err := res.Commit(context.Background(), y, false); err != nil {
		t.Fatal(err)
	}
	x := client.XID{FormatID: 3, GTRID: []byte("restart"), BQUAL: []byte("b")}
	xaTestBranch(t, res, topic, x, 3)
	if rc, err := res.Prepare(context.Background(), x); err != nil || rc != client.XAOK {
		t.Fatalf("prepare: %d %v", rc, err)
	}
	dev.Broker.xa.Sweep()
	st := dev.Broker.Store()
	waitLong(t, func() bool { return st.DispatchedOffset() == st.WrittenOffset() }, "indexing")
	if recs := bodies(t, st, xa.LogTopic, 1); len(recs) != 4 { // prepare, commit, prepare, floor
		t.Fatalf("%d branch records, want 4", len(recs))
	}
	cfg := dev.master
	if err := dev.Broker.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cfg.ConfigDir(), "xaPrepared.json")); err != nil {
		t.Fatal(err)
	}
	b, err := startConfigured(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dev.Broker = b
	if got := b.xa.Recover(); len(got) != 1 || got[0].XID.String() != x.String() || got[0].Messages != 3 {
		t.Fatalf("recover after the restart = %+v", got)
	}
	c := dialRaw(t, b.Addr())
	ext := func() map[string]string {
		return map[string]string{"formatId": strconv.Itoa(int(x.FormatID)), "gtrid": hex.EncodeToString(x.GTRID), "bqual": hex.EncodeToString(x.BQUAL)}
	}
	for i, want := range []string{"0", "-4"} { // commit, then a second commit: XAER_NOTA
		if resp := c.call(protocol.NewRequest(protocol.XACommit, ext(), nil)); resp.ExtFields["xaCode"] != want {
			t.Fatalf("commit %d: xaCode %s (%s), want %s", i+1, resp.ExtFields["xaCode"], resp.Remark, want)
		}
	}
	waitLong(t, func() bool { return b.Store().DispatchedOffset() == b.Store().WrittenOffset() }, "indexing")
	got := bodies(t, b.Store(), topic, 2)
	if got["before-0"] != 1 || len(got) != 4 {
		t.Errorf("visible after the restart's commit: %v", got)
	}
	for i := 0; i < 3; i++ {
		if n := got[fmt.Sprintf("%s-%d", x.GTRID, i)]; n != 1 {
			t.Errorf("message %d read %d times, want once", i, n)
		}
	}
}
