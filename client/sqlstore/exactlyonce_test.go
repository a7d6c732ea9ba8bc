package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
)

// consumeInto runs an exactly-once consumer of topic for group that
// inserts each message's key into table processed, until ctx ends.
func consumeInto(ctx context.Context, db *sql.DB, ns, topic, group string, batch int) (*ExactlyOnce, error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS processed (msg_key TEXT NOT NULL, queue_offset BIGINT NOT NULL)`); err != nil {
		return nil, err
	}
	store, err := NewStore(ctx, db, group, StoreOptions{})
	if err != nil {
		return nil, err
	}
	pc, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns}}, Group: group})
	if err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); _ = pc.Close() }()
	return NewExactlyOnce(Options{Consumer: pc, Store: store, Topic: topic, Batch: batch, Wait: time.Second, Logger: quiet()},
		func(ctx context.Context, tx *sql.Tx, msgs []*client.MessageExt) error {
			for _, m := range msgs {
				if _, err := tx.ExecContext(ctx, `INSERT INTO processed (msg_key, queue_offset) VALUES ($1, $2)`,
					string(m.Body), m.QueueOffset); err != nil {
					return err
				}
			}
			return nil
		})
}

// checkOnce checks that table processed holds each of the n keys once.
func checkOnce(t *testing.T, db *sql.DB, prefix string, n int) {
	t.Helper()
	rows, err := db.Query(`SELECT msg_key, count(*) FROM processed GROUP BY msg_key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]int{}
	for rows.Next() {
		var k string
		var c int
		if err := rows.Scan(&k, &c); err != nil {
			t.Fatal(err)
		}
		seen[k] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range n {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if seen[k] != 1 {
			if bad < 10 {
				t.Errorf("message %s processed %d times", k, seen[k])
			}
			bad++
		}
		delete(seen, k)
	}
	if bad > 0 || len(seen) > 0 {
		t.Fatalf("%d messages not processed exactly once; %d unknown keys", bad, len(seen))
	}
}

func count(db *sql.DB) int {
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM processed`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// TestExactlyOnceSQLite consumes a topic into SQLite, stops the consumer
// halfway and starts another: each message is in the table once.
func TestExactlyOnceSQLite(t *testing.T) {
	dev := startBroker(t)
	db := sqliteDB(t)
	const n = 400
	produce(t, dev.NamesrvAddr(), "eo-sqlite", "m", n)
	for round := 0; ; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		c, err := consumeInto(ctx, db, dev.NamesrvAddr(), "eo-sqlite", "eo-group", 8)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = c.Run(ctx); close(done) }()
		want := n / 2
		if round > 0 {
			want = n
		}
		waitFor(t, "the consumer's progress", time.Minute, func() bool { return count(db) >= want })
		cancel()
		<-done
		if round > 0 {
			break
		}
	}
	checkOnce(t, db, "m", n)
}

// childEnv names the broker, database and topic of the consumer child
// process of TestExactlyOnceKilled.
const childEnv = "SAMSA_EO_CHILD"

// TestExactlyOnceChild is the consumer process TestExactlyOnceKilled
// starts and kills; it does nothing in a test run of its own.
func TestExactlyOnceChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the child process of TestExactlyOnceKilled")
	}
	db, err := OpenPostgres(os.Getenv("SAMSA_EO_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := consumeInto(context.Background(), db, os.Getenv("SAMSA_EO_NS"), os.Getenv("SAMSA_EO_TOPIC"), "eo-killed", 4)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Run(context.Background()) // until killed
}

// TestExactlyOnceKilled: an exactly-once consumer writing each message
// into a PostgreSQL table is killed (SIGKILL) at 20 random moments while
// it works, and started again each time; then it runs to the end. The
// table holds every message exactly once.
func TestExactlyOnceKilled(t *testing.T) {
	db, dsn := postgresDB(t)
	dev := startBroker(t)
	const n, kills = 3000, 20
	topic := "eo-killed"
	produce(t, dev.NamesrvAddr(), topic, "k", n)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS processed (msg_key TEXT NOT NULL, queue_offset BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("SAMSA_EO_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (SAMSA_EO_SEED replays the kill moments)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	start := func() (*exec.Cmd, chan struct{}) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExactlyOnceChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"=1", "SAMSA_EO_DSN="+dsn, "SAMSA_EO_NS="+dev.NamesrvAddr(), "SAMSA_EO_TOPIC="+topic)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		return cmd, done
	}
	killedMidway := 0
	for i := range kills {
		cmd, done := start()
		before := count(db)
		if before < n { // a moment while it works: after its first commit, a random while later
			waitFor(t, "the consumer's progress", 2*time.Minute, func() bool { return count(db) > before })
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		<-done
		if c := count(db); c < n {
			killedMidway++
		}
	}
	t.Logf("%d of %d kills came before the last message was processed", killedMidway, kills)
	cmd, done := start()
	waitFor(t, "every message processed", 2*time.Minute, func() bool { return count(db) >= n })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	checkOnce(t, db, "k", n)
}
