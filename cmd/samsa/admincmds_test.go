package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/protocol"
)

// devCluster starts an embedded name server and broker for a test.
func devCluster(t *testing.T) (*devcluster.Cluster, string) {
	t.Helper()
	cfg := broker.Config{}
	_ = cfg.Set("secretKey", "")
	dev, err := devcluster.Start(devcluster.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Broker: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, dev.Close) })
	return dev, "--namesrv=" + dev.NamesrvAddr()
}

// closeWithin runs closeFn and fails the test if it takes over a minute.
func closeWithin(t *testing.T, closeFn func() error) {
	done := make(chan struct{})
	go func() { closeFn(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Errorf("Close did not return within a minute")
	}
}

// cli runs a command function as a shell would, with args and the name
// server flag; it returns stdout and the error.
func cli(t *testing.T, ns, in string, f func([]string) error, args ...string) (string, error) {
	t.Helper()
	return stdio(t, in, func() error { return f(append(args, ns)) })
}

// mustCLI is cli that fails the test on an error.
func mustCLI(t *testing.T, ns, in string, f func([]string) error, args ...string) string {
	t.Helper()
	out, err := cli(t, ns, in, f, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return out
}

// TestTopicAdmin: create reports what it did and refuses 0 queues and a
// shrink; update adds queues and changes permissions; stats shows the
// last store time; delete removes the topic from the route.
func TestTopicAdmin(t *testing.T) {
	dev, ns := devCluster(t)
	if _, err := cli(t, ns, "", runTopic, "create", "adm-t", "--queues", "0"); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Fatalf("--queues 0: %v", err)
	}
	out := mustCLI(t, ns, "", runTopic, "create", "adm-t", "--queues", "4")
	if !strings.Contains(out, "created") || !strings.Contains(out, "4 queues") {
		t.Fatalf("create: %q", out)
	}
	if out := mustCLI(t, ns, "", runTopic, "create", "adm-t", "--queues", "4"); !strings.Contains(out, "unchanged") {
		t.Fatalf("create again: %q", out)
	}
	_, err := cli(t, ns, "", runTopic, "create", "adm-t", "--queues", "2")
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("shrink without --force: %v", err)
	}
	if out := mustCLI(t, ns, "", runTopic, "update", "adm-t", "--queues", "6", "--perm", "r"); !strings.Contains(out, "4 -> 6 queues, R") {
		t.Fatalf("update: %q", out)
	}
	var plan struct {
		Brokers []struct {
			Action string `json:"action"`
			Queues int    `json:"queues"`
			Perm   string `json:"perm"`
		} `json:"brokers"`
	}
	out = mustCLI(t, ns, "", runTopic, "update", "adm-t", "--perm", "rw", "--json")
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Brokers) != 1 || plan.Brokers[0].Queues != 6 || plan.Brokers[0].Perm != "RW" {
		t.Fatalf("update --json: %v %q", err, out)
	}
	if out := mustCLI(t, ns, "", runTopic, "create", "adm-t", "--queues", "1", "--force"); !strings.Contains(out, "6 -> 1 queues") {
		t.Fatalf("shrink with --force: %q", out)
	}
	if _, err := cli(t, ns, "", runTopic, "update", "no-such-topic", "--queues", "2"); err == nil || !strings.Contains(err.Error(), "topic create") {
		t.Fatalf("update of a missing topic: %v", err)
	}

	before := time.Now().Add(-time.Second)
	mustCLI(t, ns, "one\ntwo\n", runProduce, "--topic", "adm-t")
	waitMax(t, ns, "adm-t", 2)
	var stats struct {
		Queues []struct {
			Max           int64  `json:"maxOffset"`
			LastStoreTime string `json:"lastStoreTime"`
		} `json:"queues"`
	}
	out = mustCLI(t, ns, "", runTopic, "stats", "adm-t", "--json")
	if err := json.Unmarshal([]byte(out), &stats); err != nil || len(stats.Queues) != 1 || stats.Queues[0].Max != 2 {
		t.Fatalf("stats: %v %q", err, out)
	}
	if lt, err := time.Parse(time.RFC3339Nano, stats.Queues[0].LastStoreTime); err != nil || lt.Before(before) {
		t.Fatalf("stats last store time %q: %v", stats.Queues[0].LastStoreTime, err)
	}
	if out := mustCLI(t, ns, "", runTopic, "stats", "adm-t"); !strings.Contains(out, "LAST STORED") {
		t.Fatalf("stats text: %q", out)
	}

	if out := mustCLI(t, ns, "", runTopic, "delete", "adm-t"); !strings.Contains(out, "deleted") || !strings.Contains(out, dev.Broker.Config().BrokerName) {
		t.Fatalf("delete: %q", out)
	}
	if out := mustCLI(t, ns, "", runTopic, "list"); strings.Contains(out, "adm-t") {
		t.Fatalf("list after delete: %q", out)
	}
	if _, err := cli(t, ns, "", runTopic, "delete", "adm-t"); err == nil {
		t.Fatalf("deleting a deleted topic: no error")
	}
}

// TestConsumeQueueOrder: each queue's messages are printed in offset
// order.
func TestConsumeQueueOrder(t *testing.T) {
	_, ns := devCluster(t)
	mustCLI(t, ns, "", runTopic, "create", "ord-t", "--queues", "2")
	mustCLI(t, ns, "", runProduce, "--topic", "ord-t", "--count", "200", "--size", "8", "--mode", "async")
	out := mustCLI(t, ns, "", runConsume, "--topic", "ord-t", "--group", "ord-g", "--from", "earliest", "--count", "200", "--json")
	last := map[int]int64{0: -1, 1: -1}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Queue  int   `json:"queue"`
			Offset int64 `json:"queueOffset"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if m.Offset <= last[m.Queue] {
			t.Fatalf("queue %d: offset %d printed after %d", m.Queue, m.Offset, last[m.Queue])
		}
		last[m.Queue] = m.Offset
		n++
	}
	if n != 200 {
		t.Fatalf("consumed %d of 200", n)
	}
}

// TestConsumePop: two consume --pop members of one group on a one-queue
// topic share its messages, each message printed once by one of them;
// --pop refuses what POP does not do.
func TestConsumePop(t *testing.T) {
	_, ns := devCluster(t)
	mustCLI(t, ns, "", runTopic, "create", "pop-t", "--queues", "1")
	mustCLI(t, ns, "", runProduce, "--topic", "pop-t", "--count", "40", "--size", "8")
	seen := map[string]int{}
	total := 0
	for _, count := range []string{"25", "15"} {
		out := mustCLI(t, ns, "", runConsume, "--pop", "--topic", "pop-t", "--group", "pop-g", "--from", "earliest", "--count", count, "--json")
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m struct {
				ID string `json:"msgId"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			seen[m.ID]++
			total++
		}
	}
	if total != 40 || len(seen) != 40 {
		t.Fatalf("printed %d messages, %d distinct; want 40 once each", total, len(seen))
	}
	if _, err := cli(t, ns, "", runConsume, "--pop", "--broadcast", "--topic", "pop-t"); err == nil || !strings.Contains(err.Error(), "--broadcast") {
		t.Fatalf("--pop --broadcast: %v", err)
	}
}

// TestGroupAdmin: list and describe a group with a member online (its
// address and version), reset refused while it runs; once it stopped, a
// dry run changes nothing and a reset moves the offsets; delete.
func TestGroupAdmin(t *testing.T) {
	dev, ns := devCluster(t)
	mustCLI(t, ns, "", runTopic, "create", "grp-t", "--queues", "2")
	mustCLI(t, ns, "", runProduce, "--topic", "grp-t", "--count", "10", "--size", "8")
	mustCLI(t, ns, "", runConsume, "--topic", "grp-t", "--group", "grp-g", "--from", "earliest", "--count", "10", "--quiet")

	// a member online
	c, err := client.NewPushConsumer(client.PushConsumerOptions{ClientOptions: client.ClientOptions{NameServers: []string{dev.NamesrvAddr()}},
		Group: "grp-g"}, func(context.Context, *client.MessageExt) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe("grp-t", "*"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			closeWithin(t, c.Close)
		}
	}()
	var desc struct {
		Members []struct {
			ClientID string `json:"clientId"`
			Addr     string `json:"addr"`
			Version  int    `json:"version"`
			Model    string `json:"messageModel"`
		} `json:"members"`
		Subscriptions map[string]string `json:"subscriptions"`
		Lag           int64             `json:"lag"`
		Queues        []struct {
			Topic        string `json:"topic"`
			Committed    int64  `json:"committed"`
			Member       string `json:"member"`
			LastConsumed string `json:"lastConsumed"`
		} `json:"queues"`
	}
	out := mustCLI(t, ns, "", runGroup, "describe", "grp-g", "--json")
	if err := json.Unmarshal([]byte(out), &desc); err != nil || len(desc.Members) != 1 || desc.Members[0].Addr == "" ||
		desc.Members[0].Version == 0 || desc.Members[0].Model != "CLUSTERING" || desc.Subscriptions["grp-t"] != "*" || desc.Lag != 0 {
		t.Fatalf("describe: %v %q", err, out)
	}
	n := 0
	for _, q := range desc.Queues {
		if q.Topic != "grp-t" {
			continue // the group's retry topic
		}
		n++
		if q.Member != desc.Members[0].ClientID || q.Committed < 0 || q.LastConsumed == "" {
			t.Fatalf("describe queues: %q", out)
		}
	}
	if n != 2 {
		t.Fatalf("describe: %d queues of grp-t: %q", n, out)
	}
	if out := mustCLI(t, ns, "", runGroup, "describe", "grp-g"); !strings.Contains(out, "1 online member") || !strings.Contains(out, desc.Members[0].Addr) {
		t.Fatalf("describe text: %q", out)
	}
	if out := mustCLI(t, ns, "", runGroup, "list"); !strings.Contains(out, "grp-g") {
		t.Fatalf("list: %q", out)
	}
	if _, err := cli(t, ns, "", runGroup, "reset-offsets", "grp-g", "--topic", "grp-t", "--to", "earliest"); err == nil ||
		!strings.Contains(err.Error(), "online member") {
		t.Fatalf("reset with a member online: %v", err)
	}
	if _, err := cli(t, ns, "", runGroup, "delete", "grp-g"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("delete with a member online: %v", err)
	}
	closeWithin(t, c.Close)
	stopped = true
	// The broker forgets the member when its UNREGISTER_CLIENT arrives.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := mustCLI(t, ns, "", runGroup, "describe", "grp-g", "--json")
		if json.Unmarshal([]byte(out), &desc) == nil && len(desc.Members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member still listed after Close: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var reset struct {
		Queues []struct{ From, To int64 } `json:"queues"`
	}
	out = mustCLI(t, ns, "", runGroup, "reset-offsets", "grp-g", "--topic", "grp-t", "--to", "earliest", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(out), &reset); err != nil || len(reset.Queues) != 2 || reset.Queues[0].To != 0 || reset.Queues[0].From <= 0 {
		t.Fatalf("dry run: %v %q", err, out)
	}
	var offs struct {
		Lag int64 `json:"lag"`
	}
	out = mustCLI(t, ns, "", runOffsets, "--group", "grp-g", "--topic", "grp-t", "--json")
	if json.Unmarshal([]byte(out), &offs) != nil || offs.Lag != 0 {
		t.Fatalf("a dry run changed the offsets: %q", out)
	}
	mustCLI(t, ns, "", runGroup, "reset-offsets", "grp-g", "--topic", "grp-t", "--to", "earliest")
	out = mustCLI(t, ns, "", runOffsets, "--group", "grp-g", "--topic", "grp-t", "--json")
	if json.Unmarshal([]byte(out), &offs) != nil || offs.Lag != 10 {
		t.Fatalf("after reset to earliest: %q", out)
	}
	mustCLI(t, ns, "", runGroup, "reset-offsets", "grp-g", "--topic", "grp-t", "--to", "3")
	out = mustCLI(t, ns, "", runOffsets, "--group", "grp-g", "--topic", "grp-t", "--json")
	if json.Unmarshal([]byte(out), &offs) != nil || offs.Lag != 4 { // two queues of 5: 2 + 2 left
		t.Fatalf("after reset to offset 3: %q", out)
	}
	mustCLI(t, ns, "", runGroup, "reset-offsets", "grp-g", "--topic", "grp-t", "--to", "latest")
	if _, err := cli(t, ns, "", runGroup, "reset-offsets", "grp-g", "--topic", "grp-t", "--to", "yesterday-ish"); err == nil {
		t.Fatalf("a bad --to: no error")
	}
	if out := mustCLI(t, ns, "", runGroup, "delete", "grp-g"); !strings.Contains(out, "deleted") {
		t.Fatalf("delete: %q", out)
	}
	if out := mustCLI(t, ns, "", runGroup, "list"); strings.Contains(out, "grp-g") {
		t.Fatalf("list after delete: %q", out)
	}
}

// TestMessageAtAndDLQ: a message looked up by queue and offset; a dead
// letter listed and resent to its original topic.
func TestMessageAtAndDLQ(t *testing.T) {
	dev, ns := devCluster(t)
	mustCLI(t, ns, "", runTopic, "create", "dlq-t", "--queues", "1")
	mustCLI(t, ns, "", runProduce, "--topic", "dlq-t", "--tags", "TG", "--keys", "k1", "--property", "color=red", "--count", "3", "--size", "12")
	var got struct {
		Messages []struct {
			QueueOffset     int64             `json:"queueOffset"`
			CommitLogOffset int64             `json:"commitLogOffset"`
			MsgID           string            `json:"msgId"`
			Properties      map[string]string `json:"properties"`
		} `json:"messages"`
		Next int64 `json:"nextOffset"`
	}
	waitMax(t, ns, "dlq-t", 3)
	out := mustCLI(t, ns, "", runMessage, "--topic", "dlq-t", "--queue", "0", "--offset", "1", "--json")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Messages) != 1 || got.Messages[0].QueueOffset != 1 || got.Next != 2 {
		t.Fatalf("message --offset 1: %v %q", err, out)
	}
	if out := mustCLI(t, ns, "", runMessage, "--topic", "dlq-t", "--queue", "0", "--offset", "0", "--max", "5"); strings.Count(out, "dlq-t") != 0 && strings.Count(out, "\n") != 4 {
		t.Fatalf("message --max 5: %q", out)
	}
	if _, err := cli(t, ns, "", runMessage, "--topic", "dlq-t", "--queue", "0", "--offset", "99"); err == nil {
		t.Fatalf("an offset past the end: no error")
	}

	// Make message 1 a dead letter of group dlq-g, as a consumer that
	// gives up on it does (CONSUMER_SEND_MSG_BACK, delay level -1).
	h := protocol.ConsumerSendMsgBackRequestHeader{Offset: got.Messages[0].CommitLogOffset, Group: "dlq-g", DelayLevel: -1,
		OriginMsgID: got.Messages[0].MsgID, OriginTopic: "dlq-t"}
	if resp := rawRequest(t, dev.BrokerAddr(), protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatalf("send back: %d %s", resp.Code, resp.Remark)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(mustCLI(t, ns, "", runDLQ, "list"), "dlq-g") {
		if time.Now().After(deadline) {
			t.Fatalf("dlq list never showed dlq-g")
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitMax(t, ns, "%DLQ%dlq-g", 1)
	out = mustCLI(t, ns, "", runDLQ, "resend", "dlq-g", "--dry-run")
	if !strings.Contains(out, "would resend") || !strings.Contains(out, "dlq-t") {
		t.Fatalf("resend --dry-run: %q", out)
	}
	out = mustCLI(t, ns, "", runDLQ, "resend", "dlq-g")
	if !strings.Contains(out, "1 resent") || !strings.Contains(out, "next offset 1") {
		t.Fatalf("resend: %q", out)
	}
	waitMax(t, ns, "dlq-t", 4)
	out = mustCLI(t, ns, "", runMessage, "--topic", "dlq-t", "--queue", "0", "--offset", "3", "--json")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Messages) != 1 {
		t.Fatalf("the resent message: %v %q", err, out)
	}
	p := got.Messages[0].Properties
	if p["color"] != "red" || p["TAGS"] != "TG" || p["ORIGIN_MESSAGE_ID"] == "" || p["RETRY_TOPIC"] != "" {
		t.Fatalf("resent properties: %v", p)
	}
}

// rawRequest sends one request to addr and returns the answer.
func rawRequest(t *testing.T, addr string, req *protocol.Command) *protocol.Command {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	req.Opaque = 1
	frame, err := protocol.AppendCommand(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	resp, err := protocol.ReadCommand(bufio.NewReader(nc), 16<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestBrokerConfigAndCluster: broker config prints the running
// configuration with the secret masked; cluster shows rates and disk use.
func TestBrokerConfigAndCluster(t *testing.T) {
	cfg := broker.Config{}
	if err := cfg.Set("accessKey", "rocketmq2"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("secretKey", "very-secret-value"); err != nil {
		t.Fatal(err)
	}
	dev, err := devcluster.Start(devcluster.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Broker: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, dev.Close)
	ns := "--namesrv=" + dev.NamesrvAddr()
	out := mustCLI(t, ns, "", brokerConfig, dev.BrokerAddr())
	if strings.Contains(out, "very-secret-value") || !strings.Contains(out, "brokerName") || !strings.Contains(out, "rocketmq2") {
		t.Fatalf("broker config: %q", out)
	}
	var m map[string]string
	out = mustCLI(t, ns, "", runBroker, "config", "--broker", dev.BrokerAddr(), "--json")
	if err := json.Unmarshal([]byte(out), &m); err != nil || m["brokerName"] != dev.Broker.Config().BrokerName || m["secretKey"] != "(set)" {
		t.Fatalf("broker config --json: %v %q", err, out)
	}
	var rows []struct {
		InPerSec  *float64 `json:"inPerSec"`
		DiskRatio *float64 `json:"diskRatio"`
	}
	for _, args := range [][]string{{"--json"}, {"--json", "--interval", "200ms"}} {
		out = mustCLI(t, ns, "", runCluster, args...)
		if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0].InPerSec == nil || rows[0].DiskRatio == nil {
			t.Fatalf("cluster %v: %v %q", args, err, out)
		}
	}
	// The table's DATA column: nothing damaged, nothing cut.
	if out = mustCLI(t, ns, "", runCluster); !strings.Contains(out, "DATA") || !strings.Contains(out, " ok") {
		t.Fatalf("cluster table without its DATA column saying ok:\n%s", out)
	}
}

// TestProduceUnknownTopicHint: a send to a topic nobody created says how
// to create it.
func TestProduceUnknownTopicHint(t *testing.T) {
	_, ns := devCluster(t)
	_, err := cli(t, ns, "x\n", runProduce, "--topic", "never-created", "--timeout", "5s")
	if err == nil || !strings.Contains(err.Error(), "samsa topic create never-created") {
		t.Fatalf("produce to a missing topic: %v", err)
	}
	if !errors.Is(err, client.ErrNoRoute) && !errors.Is(err, client.ErrTopicNotExist) {
		t.Logf("error: %v", err)
	}
	_, err = cli(t, ns, "", runConsume, "--topic", "never-created", "--idle", "1s")
	if err == nil || !strings.Contains(err.Error(), "samsa topic create never-created") {
		t.Fatalf("consume of a missing topic: %v", err)
	}
}

// waitMax waits until topic's queues hold max messages in all (the broker
// indexes a stored message a moment after it answers the send).
func waitMax(t *testing.T, ns, topic string, max int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var d struct {
			Queues []struct {
				Max int64 `json:"maxOffset"`
			} `json:"queues"`
		}
		out := mustCLI(t, ns, "", runTopic, "describe", topic, "--json")
		var sum int64
		if json.Unmarshal([]byte(out), &d) == nil {
			for _, q := range d.Queues {
				sum += q.Max
			}
		}
		if sum >= max {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d messages, want %d", topic, sum, max)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGroupDescribePop: a POP group that holds messages unacknowledged is
// described with them in flight, the acknowledged ones below its
// committed offset, and the rest as lag.
func TestGroupDescribePop(t *testing.T) {
	_, ns := devCluster(t)
	mustCLI(t, ns, "", runTopic, "create", "pop-d", "--queues", "1")
	mustCLI(t, ns, "", runProduce, "--topic", "pop-d", "--count", "10", "--size", "8")
	pc, err := client.NewPopConsumer(client.PopConsumerOptions{ClientOptions: client.ClientOptions{NameServers: []string{strings.TrimPrefix(ns, "--namesrv=")}},
		Group: "pop-dg", Topic: "pop-d"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Close() }()
	var got []*client.PoppedMessage
	for end := time.Now().Add(30 * time.Second); len(got) < 4 && time.Now().Before(end); {
		msgs, err := pc.Receive(context.Background(), 4-len(got), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msgs...)
	}
	if len(got) != 4 {
		t.Fatalf("received %d of 4", len(got))
	}
	if err := pc.AckAll(context.Background(), got[:2]); err != nil {
		t.Fatal(err)
	}
	var d struct {
		InFlight int64 `json:"popInFlight"`
		Lag      int64 `json:"lag"`
		Queues   []struct {
			Committed int64 `json:"committed"`
			InFlight  int64 `json:"popInFlight"`
		} `json:"queues"`
	}
	out := mustCLI(t, ns, "", runGroup, "describe", "pop-dg", "--json")
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if d.InFlight != 2 || len(d.Queues) != 1 || d.Queues[0].Committed != 2 || d.Queues[0].InFlight != 2 || d.Lag != 8 {
		t.Fatalf("describe: %s", out)
	}
	if text := mustCLI(t, ns, "", runGroup, "describe", "pop-dg"); !strings.Contains(text, "POP: 2 in flight") {
		t.Fatalf("describe:\n%s", text)
	}
}
