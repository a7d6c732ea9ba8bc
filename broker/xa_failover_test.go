package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

// TestXAPreparedSurvivesFailover: a SYNC_MASTER and its slave under the
// fake controller. Three branches send messages on the master: two are
// prepared, one is only ended. The master stops; the slave is elected.
// On the new master recover lists the two prepared branches, their
// messages stay invisible while its check-back discards the halves of the
// unprepared one (the check rounds ran over them and held them); commit of
// the first delivers its messages exactly once and a second commit
// answers XAER_NOTA; rollback of the second leaves its messages unread.
func TestXAPreparedSurvivesFailover(t *testing.T) {
	c := newCtlCluster(t, 1500*time.Millisecond)
	fast := func(cfg *Config) {
		cfg.TransactionTimeout = 100 * time.Millisecond
		cfg.TransactionCheckInterval = 200 * time.Millisecond
		cfg.TransactionCheckMax = 1
	}
	c.mutate = map[int64]func(*Config){1: fast, 2: fast}
	first := c.startGroup(2)

	const topic, queues = "xa-failover", 4
	if resp := dialRaw(t, first.Addr()).call(createTopicReq(topic, queues)); resp.Code != protocol.Success {
		t.Fatalf("create topic: %s", resp)
	}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{c.ns.Addr()},
		Logger: quietLogger(), RouteRefresh: 200 * time.Millisecond}, SendTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res := p.XAResource(ctlGroup.Broker)
	ctx := context.Background()
	commitX := client.XID{FormatID: 1, GTRID: []byte("fo-commit"), BQUAL: []byte("s")}
	rollbackX := client.XID{FormatID: 1, GTRID: []byte("fo-rollback"), BQUAL: []byte("s")}
	unpreparedX := client.XID{FormatID: 1, GTRID: []byte("fo-unprepared"), BQUAL: []byte("s")}
	const perBranch = 5
	send := func(x client.XID, prepare bool) {
		t.Helper()
		if err := res.Start(ctx, x, client.TMNoFlags); err != nil {
			t.Fatalf("start %s: %v", x, err)
		}
		for i := 0; i < perBranch; i++ {
			r, err := res.Send(ctx, x, &client.Message{Topic: topic, Body: []byte(fmt.Sprintf("%s-%d", x.GTRID, i))})
			if err != nil || r.Status != client.SendOK {
				t.Fatalf("send in %s: %v %+v", x, err, r)
			}
		}
		if err := res.End(ctx, x, client.TMSuccess); err != nil {
			t.Fatalf("end %s: %v", x, err)
		}
		if !prepare {
			return
		}
		if rc, err := res.Prepare(ctx, x); err != nil || rc != client.XAOK {
			t.Fatalf("prepare %s: %d %v", x, rc, err)
		}
	}
	send(commitX, true)
	send(rollbackX, true)
	send(unpreparedX, false)

	// Fail over as soon as the prepares are answered: XA_OK means the
	// slave holds the prepare records.
	c.kill(1)
	m2 := c.waitMaster(1)

	var listed []client.XAPrepared
	waitLong(t, func() bool { // the producer's routes follow the new master
		listed, err = res.Recover(ctx)
		return err == nil && len(listed) == 2
	}, "recover on the new master to list the two prepared branches")
	if listed[0].XID.String() != commitX.String() || listed[1].XID.String() != rollbackX.String() ||
		listed[0].Messages != perBranch || listed[1].Messages != perBranch {
		t.Fatalf("recover on the new master = %+v", listed)
	}

	// The unprepared branch is unknown here: its halves are discarded by
	// the check-back, whose rounds pass over the prepared branches'.
	waitLong(t, func() bool {
		return len(bodies(t, m2.Store(), TransCheckMaxTimeTopic, 1)) == perBranch
	}, "the check-back to discard the unprepared branch's halves")
	discarded := bodies(t, m2.Store(), TransCheckMaxTimeTopic, 1)
	for i := 0; i < perBranch; i++ {
		if discarded[fmt.Sprintf("%s-%d", unpreparedX.GTRID, i)] != 1 {
			t.Fatalf("discarded halves = %v, want the unprepared branch's", discarded)
		}
	}
	if got := bodies(t, m2.Store(), topic, queues); len(got) != 0 {
		t.Fatalf("messages visible before any commit: %v", got)
	}
	if _, err := res.Prepare(ctx, unpreparedX); !client.IsXACode(err, client.XAErrNoTA) {
		t.Fatalf("prepare of the branch the fail-over forgot: %v", err)
	}

	if err := res.Commit(ctx, commitX, false); err != nil {
		t.Fatalf("commit on the new master: %v", err)
	}
	if err := res.Commit(ctx, commitX, false); !client.IsXACode(err, client.XAErrNoTA) {
		t.Fatalf("second commit: %v", err)
	}
	if err := res.Rollback(ctx, rollbackX); err != nil {
		t.Fatalf("rollback on the new master: %v", err)
	}
	waitLong(t, func() bool {
		w := m2.Store().WrittenOffset()
		return m2.Store().DispatchedOffset() == w
	}, "the new master to index its log")
	got := bodies(t, m2.Store(), topic, queues)
	for i := 0; i < perBranch; i++ {
		if n := got[fmt.Sprintf("%s-%d", commitX.GTRID, i)]; n != 1 {
			t.Errorf("committed message %d read %d times, want once", i, n)
		}
	}
	if len(got) != perBranch {
		t.Errorf("visible after commit and rollback: %v, want the committed branch's %d", got, perBranch)
	}
	if left, err := res.Recover(ctx); err != nil || len(left) != 0 {
		t.Fatalf("recover after the decisions: %+v %v", left, err)
	}
	if s := m2.xa.Stats(); s.Committed != 1 || s.RolledBack != 1 || s.Prepared != 0 {
		t.Fatalf("xa stats on the new master = %+v", s)
	}
	// Two prepare records from the old master, the decisions from the new.
	if recs := bodies(t, m2.Store(), xa.LogTopic, 1); len(recs) != 4 {
		t.Fatalf("%d branch records on the new master, want 4", len(recs))
	}
}
