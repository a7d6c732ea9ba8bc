package xa

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/internal/pgtest"
)

var errCrash = errors.New("simulated crash")

// TestCoordinatorCrashPoints runs 50 global transactions, each writing a
// row to PostgreSQL and sending a message to Samsa, and stops the
// coordinator at a seeded step of each (a simulated crash: its database
// connections are dropped, its producer closed), then starts a new
// coordinator from the same log and recovers. A transaction stopped at or
// after its logged decision ends with both the row and the message; one
// stopped before it with neither. Every other recovery is stopped too, at
// a seeded step, and another recovers after it. Every row has its message
// and every message its row, once.
func TestCoordinatorCrashPoints(t *testing.T) {
	pg := pgtest.Start(t)
	admin := openPG(t, pg)
	if _, err := admin.Exec(`CREATE TABLE orders (id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	dev, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ns, topic := dev.NamesrvAddr(), "xa-orders"
	createTopic(t, ns, topic)
	seed := time.Now().UnixNano()
	if s := os.Getenv("SAMSA_XA_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (SAMSA_XA_SEED replays the crash points)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	logPath := filepath.Join(t.TempDir(), "coordinator.log")
	decision := 0
	for i, s := range Steps {
		if s == "log-commit" {
			decision = i + 1 // crashing before step i+1 means the decision is logged
		}
	}
	want := map[string]bool{} // id -> committed
	recoveryCrashes := 0
	ctx := context.Background()
	for i := range 50 {
		crashAt := rng.IntN(len(Steps) + 1) // len(Steps): no crash
		id := fmt.Sprintf("order-%d", i)
		// A coordinator process: its own connections.
		db := openPG(t, pg)
		p, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns}, Logger: quiet()}, Group: "xa-test"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		c, err := Open(Options{Name: "coord-1", LogPath: logPath, DB: db, Samsa: p.XAResource("broker-a"), Logger: quiet(),
			Step: func(string) error {
				if n == crashAt {
					return errCrash
				}
				n++
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Run(ctx, func(ctx context.Context, tx *Tx) error {
			if _, err := tx.DB.ExecContext(ctx, `INSERT INTO orders (id) VALUES ($1)`, id); err != nil {
				return err
			}
			_, err := tx.Send(ctx, &client.Message{Topic: topic, Body: []byte(id)})
			return err
		})
		switch {
		case crashAt == len(Steps) && err != nil:
			t.Fatalf("transaction %d without a crash: %v", i, err)
		case crashAt < len(Steps) && !errors.Is(err, errCrash):
			t.Fatalf("transaction %d, crash at %s: Run returned %v", i, Steps[crashAt], err)
		}
		want[id] = crashAt >= decision
		// The crash: connections dropped, nothing cleaned up.
		_ = c.Close()
		_ = db.Close()
		_ = p.Close()
		// The restart: a new coordinator from the log; every other time
		// it crashes too, at a seeded step of its recovery, and a third
		// one recovers.
		recoverCrash := -1
		if rng.IntN(2) == 0 {
			recoverCrash = rng.IntN(3)
		}
		for attempt := 0; ; attempt++ {
			db2 := openPG(t, pg)
			p2, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns}, Logger: quiet()}, Group: "xa-test"})
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			c2, err := Open(Options{Name: "coord-1", LogPath: logPath, DB: db2, Samsa: p2.XAResource("broker-a"), Logger: quiet(),
				Step: func(string) error {
					if attempt == 0 && k == recoverCrash {
						return errCrash
					}
					k++
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c2.Recover(ctx)
			_ = c2.Close()
			_ = db2.Close()
			_ = p2.Close()
			if err == nil {
				break
			}
			if !errors.Is(err, errCrash) || attempt > 0 {
				t.Fatalf("transaction %d, crash before step %d: recover: %v", i, crashAt, err)
			}
			recoveryCrashes++
		}
	}
	t.Logf("%d recoveries crashed and were recovered again", recoveryCrashes)
	committed := 0
	for _, ok := range want {
		if ok {
			committed++
		}
	}
	t.Logf("%d of 50 transactions committed", committed)
	var msgs map[string]int
	waitFor(t, "the committed messages", time.Minute, func() bool {
		msgs = visible(t, ns, topic)
		return len(msgs) >= committed
	})
	rows := map[string]bool{}
	r, err := admin.Query(`SELECT id FROM orders`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id string
		if err := r.Scan(&id); err != nil {
			t.Fatal(err)
		}
		rows[id] = true
	}
	_ = r.Close()
	for id, ok := range want {
		if rows[id] != ok || (msgs[id] == 1) != ok || msgs[id] > 1 {
			t.Errorf("%s: committed %v, row %v, message delivered %d times", id, ok, rows[id], msgs[id])
		}
	}
	if len(msgs) != committed || len(rows) != committed {
		t.Errorf("%d messages and %d rows, want %d of each", len(msgs), len(rows), committed)
	}
	var prepared int
	if err := admin.QueryRow(`SELECT count(*) FROM pg_prepared_xacts`).Scan(&prepared); err != nil || prepared != 0 {
		t.Errorf("%d prepared database transactions left (%v)", prepared, err)
	}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns}, Logger: quiet()}, Group: "xa-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if left, err := p.XAResource("broker-a").Recover(ctx); err != nil || len(left) != 0 {
		t.Errorf("prepared Samsa branches left: %v (%v)", left, err)
	}
}
