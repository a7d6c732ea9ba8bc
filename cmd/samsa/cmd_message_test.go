package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/devcluster"
)

// TestMessageCommand: samsa message finds messages by key (text and
// --json, a time range) and one message by either of its ids.
func TestMessageCommand(t *testing.T) {
	dev, err := devcluster.Start(devcluster.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
	run("", runTopic, "create", "msg-topic", "--queues", "2")
	run("red-1\nred-2\nred-3\n", runProduce, "--topic", "msg-topic", "--keys", "red shared")
	run("blue-1\n", runProduce, "--topic", "msg-topic", "--keys", "blue shared")
	type jmsg struct {
		MsgID       string   `json:"msgId"`
		OffsetMsgID string   `json:"offsetMsgId"`
		Keys        []string `json:"keys"`
		Body        string   `json:"body"`
	}
	var res struct{ Messages []jmsg }
	deadline := time.Now().Add(10 * time.Second)
	for len(res.Messages) < 4 && time.Now().Before(deadline) { // the index follows the dispatcher
		out := run("", runMessage, "--topic", "msg-topic", "--key", "shared", "--json")
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(res.Messages) != 4 {
		t.Fatalf("shared: %+v", res.Messages)
	}
	out := run("", runMessage, "--topic", "msg-topic", "--key", "red")
	if strings.Count(out, "red-") != 3 || strings.Contains(out, "blue-1") || !strings.Contains(out, "OFFSETMSGID") {
		t.Fatalf("red:\n%s", out)
	}
	if out := run("", runMessage, "--topic", "msg-topic", "--key", "red", "--max", "1", "--json"); strings.Count(out, "red-") != 1 {
		t.Fatalf("--max 1:\n%s", out)
	}
	if out := run("", runMessage, "--topic", "msg-topic", "--key", "red", "--end", "-1h"); !strings.Contains(out, "no message") {
		t.Fatalf("--end an hour ago:\n%s", out)
	}
	if out := run("", runMessage, "--topic", "msg-topic", "--key", "red", "--begin", "-1h", "--end", "-0s"); strings.Count(out, "red-") != 3 {
		t.Fatalf("the last hour:\n%s", out)
	}
	var blue jmsg
	for _, m := range res.Messages {
		if m.Body == "blue-1" {
			blue = m
		}
	}
	if blue.MsgID == "" || blue.OffsetMsgID == "" || blue.MsgID == blue.OffsetMsgID {
		t.Fatalf("ids: %+v", blue)
	}
	for _, args := range [][]string{
		{"--id", blue.OffsetMsgID},
		{"--id", blue.MsgID, "--topic", "msg-topic"},
		{"--id", blue.MsgID}, // every topic searched
	} {
		out := run("", runMessage, args...)
		if !strings.Contains(out, "blue-1") || !strings.Contains(out, blue.MsgID) || !strings.Contains(out, blue.OffsetMsgID) {
			t.Fatalf("%v:\n%s", args, out)
		}
	}
	if _, err := stdio(t, "", func() error { return runMessage([]string{"--id", "00000000000000000000000000000000", ns}) }); err == nil {
		t.Fatal("an unknown id: no error")
	}
	if _, err := stdio(t, "", func() error { return runMessage([]string{"--key", "red", ns}) }); err == nil {
		t.Fatal("--key without --topic: no error")
	}
}
