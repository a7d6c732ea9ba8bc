package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/internal/pgtest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// sqliteDB opens a new SQLite database for t.
func sqliteDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "offsets.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// postgresDB starts a private PostgreSQL server for t (or skips t).
func postgresDB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	s := pgtest.Start(t)
	dsn := s.DSN("postgres")
	db, err := OpenPostgres(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, dsn
}

// startBroker starts a name server and a broker in this process.
func startBroker(t testing.TB) *devcluster.Cluster {
	t.Helper()
	dev, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}

// createTopic creates topic with 4 queues.
func createTopic(t testing.TB, ns, topic string) {
	t.Helper()
	a, err := client.NewAdmin(client.ClientOptions{NameServers: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.CreateTopic(ctx, topic, client.TopicOptions{Queues: 4}); err != nil {
		t.Fatal(err)
	}
}

// produce creates topic and sends n messages with keys "<prefix>-<i>" to
// it.
func produce(t testing.TB, ns, topic, prefix string, n int) {
	t.Helper()
	createTopic(t, ns, topic)
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns}}, Group: "sqlstore-test-producer"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := p.Send(ctx, &client.Message{Topic: topic, Body: []byte(key), Keys: []string{key}}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
}

// waitFor polls cond every 20 ms until it holds or the deadline (generous:
// the machine may be loaded) passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
