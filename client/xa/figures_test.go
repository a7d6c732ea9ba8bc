package xa

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/client/sqlstore"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/internal/pgtest"
)

// TestXAFigures prints the lab figure of XA and exactly-once consumption
// (PERFORMANCE.md): send latency p50/p99 of a plain send, a half-message
// transaction (send + confirmed commit), an XA branch alone (start, send,
// end, prepare, commit), the same committed one-phase, and a global
// transaction over PostgreSQL and Samsa (coordinator, with its log); then
// messages a second of a pull consumer, of a consumer writing each message
// into PostgreSQL (one transaction a batch), and of the exactly-once
// consumer (the same, plus its offset in that transaction). One request in
// flight, embedded broker, private PostgreSQL on loopback. Opt-in:
//
//	SAMSA_XA_FIGURES=1 go test ./client/xa -run TestXAFigures -v
func TestXAFigures(t *testing.T) {
	if os.Getenv("SAMSA_XA_FIGURES") == "" {
		t.Skip("the lab figure; SAMSA_XA_FIGURES=1 runs it")
	}
	n := 2000
	if s := os.Getenv("SAMSA_XA_FIGURES_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	pg := pgtest.Start(t)
	db := openPG(t, pg)
	dev, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ns := dev.NamesrvAddr()
	for _, tp := range []string{"fig-send", "fig-eo"} {
		createTopic(t, ns, tp)
	}
	copts := client.ClientOptions{NameServers: []string{ns}, Logger: quiet()}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: copts, Group: "fig"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tp, err := client.NewTransactionProducer(client.ProducerOptions{ClientOptions: copts, Group: "fig-txn"}, client.TransactionOptions{ConfirmEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if _, err := db.Exec(`CREATE TABLE fig (id TEXT)`); err != nil {
		t.Fatal(err)
	}
	r := p.XAResource("broker-a")
	c, err := Open(Options{Name: "fig", LogPath: filepath.Join(t.TempDir(), "coord.log"), DB: db, Samsa: r, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	body := make([]byte, 1024)
	msg := func() *client.Message { return &client.Message{Topic: "fig-send", Body: body} }
	seq := 0
	xid := func() client.XID {
		seq++
		return client.XID{FormatID: 9, GTRID: []byte("fig-" + strconv.Itoa(seq)), BQUAL: []byte("b")}
	}
	cases := []struct {
		name string
		op   func() error
	}{
		{"plain send", func() error { _, err := p.Send(ctx, msg()); return err }},
		{"half-message transaction (send + commit)", func() error {
			tx := tp.Begin()
			if _, err := tx.Send(ctx, msg()); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}},
		{"XA branch, two-phase (start, send, end, prepare, commit)", func() error {
			x := xid()
			return run(r.Start(ctx, x, client.TMNoFlags), func() error { _, err := r.Send(ctx, x, msg()); return err },
				func() error { return r.End(ctx, x, client.TMSuccess) }, func() error { _, err := r.Prepare(ctx, x); return err },
				func() error { return r.Commit(ctx, x, false) })
		}},
		{"XA branch, one-phase (start, send, end, commit)", func() error {
			x := xid()
			return run(r.Start(ctx, x, client.TMNoFlags), func() error { _, err := r.Send(ctx, x, msg()); return err },
				func() error { return r.End(ctx, x, client.TMSuccess) }, func() error { return r.Commit(ctx, x, true) })
		}},
		{"global transaction, PostgreSQL + Samsa (coordinator)", func() error {
			return c.Run(ctx, func(ctx context.Context, tx *Tx) error {
				if _, err := tx.DB.ExecContext(ctx, `INSERT INTO fig VALUES ('x')`); err != nil {
					return err
				}
				_, err := tx.Send(ctx, msg())
				return err
			})
		}},
	}
	t.Logf("send latency, 1 KiB, one in flight, %d each (after 100 warm-up):", n)
	t.Logf("%-58s %9s %9s %9s", "", "p50 ms", "p99 ms", "ops/s")
	for _, cs := range cases {
		for range 100 {
			if err := cs.op(); err != nil {
				t.Fatalf("%s: %v", cs.name, err)
			}
		}
		lat := make([]time.Duration, 0, n)
		start := time.Now()
		for range n {
			t0 := time.Now()
			if err := cs.op(); err != nil {
				t.Fatalf("%s: %v", cs.name, err)
			}
			lat = append(lat, time.Since(t0))
		}
		el := time.Since(start)
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		t.Logf("%-58s %9.3f %9.3f %9.0f", cs.name, ms(lat[n/2]), ms(lat[n*99/100]), float64(n)/el.Seconds())
	}
	// Consumption.
	m := 10 * n
	for i := 0; i < m; i += 64 {
		batch := make([]*client.Message, 0, 64)
		for j := i; j < min(i+64, m); j++ {
			batch = append(batch, &client.Message{Topic: "fig-eo", Body: []byte("m-" + strconv.Itoa(j))})
		}
		if _, err := p.SendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`CREATE TABLE fig_eo (id TEXT)`); err != nil {
		t.Fatal(err)
	}
	insert := func(ctx context.Context, tx *sql.Tx, msgs []*client.MessageExt) error {
		for _, m := range msgs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO fig_eo VALUES ($1)`, string(m.Body)); err != nil {
				return err
			}
		}
		return nil
	}
	pc, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: copts, Group: "fig-eo", OffsetStore: &client.MemoryOffsetStore{}})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	qs, err := pc.Queues(ctx, "fig-eo")
	if err != nil {
		t.Fatal(err)
	}
	// plain reads every queue from 0, a goroutine a queue (as the
	// exactly-once consumer does), with or without the database work.
	plain := func(withDB bool) (float64, error) {
		start := time.Now()
		var wg sync.WaitGroup
		var got atomic.Int64
		errs := make(chan error, len(qs))
		for _, q := range qs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for off := int64(0); ; {
					res, err := pc.Pull(ctx, q, off, client.PullOptions{MaxMessages: 32})
					if err != nil {
						errs <- err
						return
					}
					if res.Status == client.PullNoNewMessage || res.NextOffset == off {
						return
					}
					if withDB {
						tx, err := db.BeginTx(ctx, nil)
						if err == nil {
							if err = insert(ctx, tx, res.Messages); err == nil {
								err = tx.Commit()
							} else {
								_ = tx.Rollback()
							}
						}
						if err != nil {
							errs <- err
							return
						}
					}
					got.Add(int64(len(res.Messages)))
					off = res.NextOffset
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return 0, err
		}
		if n := got.Load(); n != int64(m) {
			return 0, fmt.Errorf("read %d of %d", n, m)
		}
		return float64(m) / time.Since(start).Seconds(), nil
	}
	pullRate, err := plain(false)
	if err != nil {
		t.Fatal(err)
	}
	dbRate, err := plain(true)
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlstore.NewStore(ctx, db, "fig-eo-x", sqlstore.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eo, err := sqlstore.NewExactlyOnce(sqlstore.Options{Consumer: pc, Store: store, Topic: "fig-eo", Queues: qs, Batch: 32, Wait: 100 * time.Millisecond, Logger: quiet()}, insert)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() { _ = eo.Run(rctx); close(done) }()
	waitFor(t, "the exactly-once consumer", 10*time.Minute, func() bool { return eo.Stats().Messages >= int64(m) })
	eoRate := float64(m) / time.Since(start).Seconds()
	cancel()
	<-done
	t.Logf("consumption of %d messages, batches of 32, %d queues, a goroutine a queue:", m, len(qs))
	t.Logf("%-58s %9.0f msgs/s", "pull consumer, no database", pullRate)
	t.Logf("%-58s %9.0f msgs/s", "pull consumer, a row a message, a transaction a batch", dbRate)
	t.Logf("%-58s %9.0f msgs/s", "exactly-once consumer (the same + offset in the transaction)", eoRate)
}

// run runs the steps after a first error-or-nil, stopping at an error.
func run(first error, steps ...func() error) error {
	if first != nil {
		return first
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}
