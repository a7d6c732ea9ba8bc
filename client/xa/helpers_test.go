package xa

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/pgtest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openPG opens a database on a private server, and returns its DSN too.
func openPG(t testing.TB, s *pgtest.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// createTopic creates topic with 4 queues on every master, once a
// master is registered.
func createTopic(t testing.TB, ns, topic string) {
	t.Helper()
	a, err := client.NewAdmin(client.ClientOptions{NameServers: []string{ns}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitFor(t, "topic "+topic+" created", time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = a.CreateTopic(ctx, topic, client.TopicOptions{Queues: 4})
		return err == nil
	})
}

// visible reads every message of topic from the start: key -> count.
func visible(t testing.TB, ns, topic string) map[string]int {
	t.Helper()
	pc, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns}, Logger: quiet()},
		Group: "xa-test-reader", OffsetStore: &client.MemoryOffsetStore{}})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Right after a broker restart the name server may not route the
	// topic yet (the killed broker's routes went with its connection):
	// wait for the route, not for a time.
	qs, err := pc.Queues(ctx, topic)
	for err != nil && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		qs, err = pc.Queues(ctx, topic)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, q := range qs {
		for off := int64(0); ; {
			res, err := pc.Pull(ctx, q, off, client.PullOptions{MaxMessages: 32})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Messages {
				out[string(m.Body)]++
			}
			if res.Status == client.PullNoNewMessage || res.NextOffset == off {
				break
			}
			off = res.NextOffset
		}
	}
	return out
}

// waitFor polls cond every 20 ms until it holds or d passes.
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
