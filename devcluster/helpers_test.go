package devcluster

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
)

// quietLogger drops what the servers log.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitFor polls cond until it holds, failing after a deadline generous
// enough for a loaded machine under -race.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sendRetrying sends one message, retrying for up to a minute (a route
// not yet known, a master just elected).
func sendRetrying(t *testing.T, p *client.Producer, m *client.Message) *client.SendResult {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		res, err := p.Send(ctx, m)
		cancel()
		if err == nil {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("send to %s: %v", m.Topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
