package main

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestControllerFlags(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	parse := func(prefix string, args ...string) (*controllerFlags, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f controllerFlags
		f.register(fs, prefix)
		return &f, fs.Parse(args)
	}
	f, err := parse("controller-", "--controller-id", "2", "--controller-peers", "1=127.0.0.1:9001@127.0.0.1:9101,2=127.0.0.1:9002@127.0.0.1:9102",
		"--controller-raft-listen", "127.0.0.1:9002", "--controller-listen", "127.0.0.1:9102", "--controller-data-dir", t.TempDir(),
		"--controller-election-timeout", "2s", "--controller-unclean-election")
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.options(log)
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != "2" || len(o.Peers) != 2 || o.Controller.ElectionTimeout != 2*time.Second || !o.Controller.UncleanElection || o.RaftListener != nil || o.Listener != nil {
		t.Fatalf("options: %s", o)
	}
	// Listen addresses default to the peer list's.
	f, _ = parse("", "--id", "1", "--peers", "1=127.0.0.1:9001@127.0.0.1:9101", "--data-dir", t.TempDir())
	if o, err = f.options(log); err != nil || o.RaftListener != nil || o.Listener != nil {
		t.Fatalf("peer addresses as listen addresses: %v", err)
	}
	// No peers: one replica at the listen addresses.
	f, _ = parse("", "--id", "7", "--data-dir", t.TempDir())
	if o, err = f.options(log); err != nil || len(o.Peers) != 1 || o.Peers[0].ID != "7" || o.Peers[0].RPCAddr != "127.0.0.1:9878" {
		t.Fatalf("single: %v %v", o.Peers, err)
	}
	f, _ = parse("", "--id", "1")
	if _, err := f.options(log); err == nil || !strings.Contains(err.Error(), "data-dir") {
		t.Fatalf("no data dir: %v", err)
	}
}
