package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestConventions: help to stdout with status 0 in every spelling, flag
// errors with status 2, servers refusing stray arguments.
func TestConventions(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"help", "topic"}, {"help", "topic", "create"},
		{"topic", "create", "-h"}, {"topic", "help", "create"}, {"dev", "help"}, {"dev", "-h"}, {"broker", "--help"},
		{"namesrv", "-h"}, {"produce", "-h"}, {"consume", "--help"}, {"group", "help"}, {"group", "reset-offsets", "-h"},
		{"dlq", "resend", "-h"}, {"message", "-h"}, {"broker", "config", "-h"}, {"help", "cluster"}, {"version", "-h"}, {"help", "store", "verify"}, {"store", "repair", "-h"}} {
		var code int
		out, _ := stdio(t, "", func() error { code = runBounded(t, args); return nil })
		if code != 0 || !strings.HasPrefix(out, "usage: samsa") {
			t.Errorf("%q: status %d, stdout %q", args, code, out)
		}
	}
	for _, c := range []struct {
		args []string
		code int
	}{{[]string{"dev", "stray"}, 1}, {[]string{"namesrv", "x"}, 1}, {[]string{"broker", "y"}, 1},
		{[]string{"topic", "create", "--bogus"}, 2}, {[]string{"no-such-command"}, 2}} {
		var code int
		out, _ := stdio(t, "", func() error { code = runBounded(t, c.args); return nil })
		if code != c.code || out != "" {
			t.Errorf("%q: status %d (want %d), stdout %q", c.args, code, c.code, out)
		}
	}
}

// runBounded is run(args), failing the test if it has not returned within
// 30 s (a server command that starts instead of printing its help waits
// for a signal).
func runBounded(t *testing.T, args []string) int {
	t.Helper()
	ch := make(chan int, 1)
	go func() { ch <- run(args) }()
	select {
	case code := <-ch:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("samsa %q did not return", args)
		return -1
	}
}

// TestNamesrvFlags: -n and $NAMESRV_ADDR give the name servers, -n
// winning over the variable.
func TestNamesrvFlags(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
	fs := newFlagSet("x", "", "")
	cf := addClientFlags(fs)
	if _, err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	if o, _ := cf.options(); len(o.NameServers) != 2 || o.NameServers[1] != "10.0.0.2:9876" {
		t.Fatalf("from $NAMESRV_ADDR: %v", o.NameServers)
	}
	fs = newFlagSet("x", "", "")
	cf = addClientFlags(fs)
	if _, err := parseFlags(fs, []string{"-n", "127.0.0.1:1234"}); err != nil {
		t.Fatal(err)
	}
	if o, _ := cf.options(); len(o.NameServers) != 1 || o.NameServers[0] != "127.0.0.1:1234" {
		t.Fatalf("from -n: %v", o.NameServers)
	}
}

// TestReadLinesInterrupt: the line reader ends when its context does,
// even while a read blocks; a line over 4 MiB is an error naming the
// limit; the lines before it are delivered.
func TestReadLinesInterrupt(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	lines, errFn := readLines(ctx, pr)
	go io.WriteString(pw, "first\n")
	if l := <-lines; string(l) != "first" {
		t.Fatalf("got %q", l)
	}
	cancel() // the reader now blocks in Read: the channel must close anyway
	select {
	case _, ok := <-lines:
		if ok {
			t.Fatalf("a line after the interrupt")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("readLines did not end on interrupt")
	}
	if err := errFn(); err != nil {
		t.Fatalf("interrupted read: %v", err)
	}

	long := "ok\n" + strings.Repeat("x", maxLine+10) + "\nafter\n"
	lines, errFn = readLines(context.Background(), strings.NewReader(long))
	var got []string
	for l := range lines {
		got = append(got, string(l))
	}
	if len(got) != 1 || got[0] != "ok" {
		t.Fatalf("lines before the long one: %q", got)
	}
	if err := errFn(); err == nil || !strings.Contains(err.Error(), "4 MiB") {
		t.Fatalf("long line: %v", err)
	}
}
