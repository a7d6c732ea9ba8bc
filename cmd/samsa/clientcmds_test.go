package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/samsamq/samsa/devcluster"
)

// stdio runs f with stdin fed from in, and returns what it wrote to stdout.
// Tests that use it must not run in parallel (os.Stdout is swapped).
func stdio(t *testing.T, in string, f func() error) (string, error) {
	t.Helper()
	oldOut, oldIn := os.Stdout, os.Stdin
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ir, iw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		io.WriteString(iw, in)
		iw.Close()
	}()
	os.Stdout, os.Stdin = w, ir
	var out bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(&out, r)
	}()
	ferr := f()
	w.Close()
	wg.Wait()
	os.Stdout, os.Stdin = oldOut, oldIn
	ir.Close()
	return out.String(), ferr
}

// TestClientCommands drives the client commands against an embedded
// cluster, as a user would from a shell.
func TestClientCommands(t *testing.T) {
	dev, err := devcluster.Start(devcluster.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Slaves: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ns := "--namesrv=" + dev.NamesrvAddr()
	run := func(in string, f func([]string) error, args ...string) string {
		t.Helper()
		out, err := stdio(t, in, func() error { return f(append(args, ns)) })
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := run("", runTopic, "create", "cli-topic", "--queues", "2"); !strings.Contains(out, "created") {
		t.Fatalf("topic create: %q", out)
	}
	if out := run("", runTopic, "list"); strings.TrimSpace(out) != "cli-topic" {
		t.Fatalf("topic list: %q", out)
	}
	if out := run("", runTopic, "route", "cli-topic"); !strings.Contains(out, dev.BrokerAddr()) {
		t.Fatalf("topic route: %q", out)
	}
	run("alpha\nbeta\ngamma\n", runProduce, "--topic", "cli-topic", "--tags", "T")
	run("", runProduce, "--topic", "cli-topic", "--count", "7", "--size", "10", "--batch", "4")
	var desc struct {
		Queues []struct{ MaxOffset int64 } `json:"queues"`
	}
	out := run("", runTopic, "describe", "cli-topic", "--json")
	if err := json.Unmarshal([]byte(out), &desc); err != nil {
		t.Fatalf("describe --json: %v\n%s", err, out)
	}
	out = run("", runConsume, "--topic", "cli-topic", "--group", "cli-g", "--from", "earliest", "--count", "10", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 10 {
		t.Fatalf("consume printed %d lines:\n%s", len(lines), out)
	}
	bodies := map[string]bool{}
	for _, l := range lines {
		var m struct{ Body, Tags string }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("consume line %q: %v", l, err)
		}
		bodies[m.Body] = true
	}
	for _, b := range []string{"alpha", "beta", "gamma"} {
		if !bodies[b] {
			t.Fatalf("consume missed %q: %v", b, bodies)
		}
	}
	var offs struct {
		Lag    int64 `json:"lag"`
		Queues []struct {
			Topic     string `json:"topic"`
			Committed int64  `json:"committed"`
		} `json:"queues"`
	}
	out = run("", runOffsets, "--group", "cli-g", "--topic", "cli-topic", "--json")
	if err := json.Unmarshal([]byte(out), &offs); err != nil || len(offs.Queues) != 2 || offs.Lag != 0 {
		t.Fatalf("offsets: %v %+v\n%s", err, offs, out)
	}
	if out := run("", runCluster); !strings.Contains(out, "master") || !strings.Contains(out, dev.BrokerAddr()) ||
		!strings.Contains(out, "ASYNC_MASTER") || !strings.Contains(out, dev.Slaves[0].Addr()) || !strings.Contains(out, "SLAVE") {
		t.Fatalf("cluster: %q", out)
	}
	var rows []struct {
		ID         int64  `json:"id"`
		Role       string `json:"role"`
		BrokerRole string `json:"brokerRole"`
	}
	if out := run("", runCluster, "--json"); json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 ||
		rows[1].ID != 1 || rows[1].Role != "slave" || rows[1].BrokerRole != "SLAVE" {
		t.Fatalf("cluster --json: %q", out)
	}
	if out := run("", runStats, "--broker", dev.BrokerAddr()); !strings.Contains(out, "broker_name") {
		t.Fatalf("stats: %q", out)
	}
	// an item asks for its lines only: the master's replication lines
	// name its slave
	if out := run("", runStats, "--broker", dev.BrokerAddr(), "ha"); !strings.Contains(out, "ha_role") ||
		!strings.Contains(out, "ha_slaves") || strings.Contains(out, "broker_name") {
		t.Fatalf("stats ha: %q", out)
	}
}
