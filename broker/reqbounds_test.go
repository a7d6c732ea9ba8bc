package broker

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// safeProducer sends n messages to topic "safe" (4 queues) from its own
// connection while a test sends bad requests; check waits for it and
// fails unless every send was acknowledged and every message can be
// pulled.
func safeProducer(t *testing.T, b *Broker, n int) (check func()) {
	t.Helper()
	var wg sync.WaitGroup
	acked := make([]bool, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := dialRaw(t, b.Addr())
		for i := 0; i < n; i++ {
			r := p.call(sendReq("safe", int32(i%4), []byte{byte(i), byte(i >> 8)}, nil))
			acked[i] = r.Code == protocol.Success
		}
	}()
	return func() {
		t.Helper()
		wg.Wait()
		for i, ok := range acked {
			if !ok {
				t.Fatalf("well-behaved send %d not acknowledged", i)
			}
		}
		waitFor(t, func() bool {
			total := int64(0)
			for q := int32(0); q < 4; q++ {
				total += b.store.MaxQueueOffset("safe", q)
			}
			return total == int64(n)
		}, "all messages dispatched")
		c := dialRaw(t, b.Addr())
		got := 0
		for q := int32(0); q < 4; q++ {
			for off := int64(0); ; {
				r := c.call(pullReq("g", "safe", q, off, 256, 0, "*"))
				if r.Code != protocol.Success {
					break
				}
				got += len(decodeRecords(t, r.Body))
				off = ext64(t, r, "nextBeginOffset")
			}
		}
		if got != n {
			t.Fatalf("pulled %d messages, want %d", got, n)
		}
	}
}

// Offset commits, heartbeats and group changes with names RocketMQ would
// refuse are answered with an error and store nothing; the broker then
// restarts with what it stored (an empty group's commit once
// made consumerOffset.json unloadable).
func TestMetadataValidatedOnTheWayIn(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, nil)
	ctl := dialRaw(t, b.Addr())
	if r := ctl.call(createTopicReq("safe", 4)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	check := safeProducer(t, b, 1000)

	long := strings.Repeat("g", MaxGroupLength+1)
	commits := []struct {
		name         string
		group, topic string
		queue        int32
		offset       int64
		code         protocol.ResponseCode
	}{
		{"empty group", "", "safe", 0, 1, protocol.SubscriptionGroupNotExist},
		{"long group", long, "safe", 0, 1, protocol.SubscriptionGroupNotExist},
		{"group with @", "a@b", "safe", 0, 1, protocol.SubscriptionGroupNotExist},
		{"group with a space", "a b", "safe", 0, 1, protocol.SubscriptionGroupNotExist},
		{"empty topic", "g", "", 0, 1, protocol.TopicNotExist},
		{"long topic", "g", strings.Repeat("t", MaxTopicLength+1), 0, 1, protocol.TopicNotExist},
		{"topic with a slash", "g", "a/b", 0, 1, protocol.TopicNotExist},
		{"unknown topic", "g", "nosuch", 0, 1, protocol.TopicNotExist},
		{"queue past the topic's", "g", "safe", 4, 1, protocol.InvalidParameter},
		{"negative queue", "g", "safe", -1, 1, protocol.InvalidParameter},
		{"negative offset", "g", "safe", 0, -5, protocol.InvalidParameter},
	}
	c := dialRaw(t, b.Addr())
	for _, tc := range commits {
		if r := c.call(updateOffsetReq(tc.group, tc.topic, tc.queue, tc.offset)); r.Code != tc.code || r.Remark == "" {
			t.Fatalf("%s: %s, want %v", tc.name, r, tc.code)
		}
	}
	if r := c.call(updateOffsetReq("g", "safe", 3, 11)); r.Code != protocol.Success {
		t.Fatalf("good commit: %s", r)
	}
	if w := b.offsets.All(); len(w) != 1 || len(w["safe@g"]) != 1 {
		t.Fatalf("offset table after refused commits: %v", w)
	}

	// Heartbeats and group creation with bad names.
	for _, hb := range []*protocol.Command{
		heartbeatReq(t, "c1", "bad group", "safe"),
		heartbeatReq(t, "c1", long, "safe"),
		heartbeatReq(t, "c1", "g", "bad topic"),
	} {
		if r := c.call(hb); r.Code != protocol.SystemError || !strings.Contains(r.Remark, "heartbeat refused") {
			t.Fatalf("bad heartbeat: %s", r)
		}
	}
	for _, name := range []string{"", "bad group", long} {
		if r := c.call(groupReq(t, protocol.DefaultSubscriptionGroup(name))); r.Code != protocol.InvalidParameter {
			t.Fatalf("create group %.20q: %s", name, r)
		}
	}
	if groups, _ := b.groups.snapshot(); len(groups) != 0 {
		t.Fatalf("groups stored: %v", groups)
	}
	for _, name := range []string{"", "bad topic", strings.Repeat("t", MaxTopicLength+1)} {
		if r := c.call(createTopicReq(name, 1)); r.Code == protocol.Success {
			t.Fatalf("create topic %.20q: %s", name, r)
		}
	}
	check()

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, dir, nil)
	defer b2.Close()
	if got := offsetOf(t, b2, "g", "safe", 3); got != 11 {
		t.Fatalf("offset after restart: %d", got)
	}
	if n := b2.stats.configSetAside.Load(); n != 0 {
		t.Fatalf("files set aside on a clean restart: %d", n)
	}
}

// A consumerOffset.json holding the entry an empty-group commit used to
// write ("topic@") no longer stops the broker: the rest loads, the
// original is kept beside it, and the next file holds the good entries.
func TestEmptyGroupOffsetFileRestarts(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	orig := `{"offsetTable":{"safe@":{"0":1},"safe@g":{"2":9}}}`
	if err := os.WriteFile(filepath.Join(cfgDir, "consumerOffset.json"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, dir, nil)
	if got := offsetOf(t, b, "g", "safe", 2); got != 9 {
		t.Fatalf("good offset: %d", got)
	}
	if got := offsetOf(t, b, "", "safe", 0); got != -1 {
		t.Fatalf("bad entry loaded: %d", got)
	}
	if n := b.stats.configSetAside.Load(); n != 1 {
		t.Fatalf("set aside counted %d", n)
	}
	copies, _ := filepath.Glob(filepath.Join(cfgDir, "consumerOffset.json.bad-*"))
	if len(copies) != 1 {
		t.Fatalf("copies %v", copies)
	}
	if kept, _ := os.ReadFile(copies[0]); string(kept) != orig {
		t.Fatalf("kept copy %q", kept)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	now, _ := os.ReadFile(filepath.Join(cfgDir, "consumerOffset.json"))
	if strings.Contains(string(now), `"safe@"`) || !strings.Contains(string(now), `"safe@g"`) {
		t.Fatalf("file after restart: %s", now)
	}
	// Garbage in the whole file: set aside, the broker starts empty.
	if err := os.WriteFile(filepath.Join(cfgDir, "consumerOffset.json"), []byte("\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, dir, nil)
	defer b2.Close()
	if got := offsetOf(t, b2, "g", "safe", 2); got != -1 {
		t.Fatalf("offset from a garbage file: %d", got)
	}
	if n := b2.stats.configSetAside.Load(); n != 1 {
		t.Fatalf("set aside counted %d", n)
	}
	found := false
	for _, l := range b2.generalStats() {
		found = found || l.name == "config_files_set_aside" && l.value == int64(1)
	}
	if !found {
		t.Fatalf("stats do not report the file set aside: %v", b2.generalStats())
	}
}

// A batch of 600,000 empty messages (13 MiB, under maxMessageSize here) is
// refused before anything is stored: it was stored and never answered,
// its answer being larger than a frame. A well-behaved producer loses
// nothing meanwhile.
func TestHugeEmptyBatchRefused(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.MaxMessageSize = 16 << 20 })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("safe", 4)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	check := safeProducer(t, b, 500)
	for _, n := range []int{600_000, MaxBatchMessages + 1} {
		items := make([]batchItem, n)
		before := b.store.MaxQueueOffset("safe", 0)
		r := c.call(itemsBatchReq("safe", items))
		if r.Code != protocol.MessageIllegal || !strings.Contains(r.Remark, "more than") {
			t.Fatalf("batch of %d empty messages: %s", n, r)
		}
		// Nothing of it: queue 0 holds only the producer's messages.
		if got := b.store.MaxQueueOffset("safe", 0) - before; got > 500 {
			t.Fatalf("batch of %d: queue 0 grew by %d", n, got)
		}
	}
	check()
	if got := b.store.MaxQueueOffset("safe", 0); got != 125 {
		t.Fatalf("queue 0 holds %d messages, want the producer's 125", got)
	}
}

// Past maxHeldPulls a suspending pull is answered at once instead of
// held; the held ones are still woken by an arrival.
func TestHeldPullsCapped(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { c.MaxHeldPulls = 2 })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("lpcap", 1)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	var pending []<-chan *protocol.Command
	for i := 0; i < 2; i++ {
		pending = append(pending, c.start(pullReq("g", "lpcap", 0, 0, 32, time.Hour, "*")))
		waitFor(t, func() bool { return b.stats.held.Load() == int64(i+1) }, "pull held")
	}
	if r := c.call(pullReq("g", "lpcap", 0, 0, 32, time.Hour, "*")); r.Code != protocol.PullNotFound {
		t.Fatalf("pull past the cap: %s", r)
	}
	if n := b.stats.heldRefused.Load(); n != 1 || b.stats.held.Load() != 2 {
		t.Fatalf("refused %d, held %d", n, b.stats.held.Load())
	}
	if r := c.call(sendReq("lpcap", 0, []byte("wake"), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	for _, p := range pending {
		select {
		case r := <-p:
			if r.Code != protocol.Success {
				t.Fatalf("held pull: %s", r)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("held pull never answered")
		}
	}
}

// A directory where a config file belongs (on disk) is set aside, the
// broker starts with that table empty and saves the file in its place.
func TestConfigDirectoryInPlaceOnDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "subscriptionGroup.json")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, dir, nil)
	if n := b.stats.configSetAside.Load(); n != 1 {
		t.Fatalf("set aside counted %d", n)
	}
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("safe", 1))
	if r := c.call(heartbeatReq(t, "c1", "g", "safe")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		t.Fatalf("config file after a save: %v %v", fi, err)
	}
	if copies, _ := filepath.Glob(path + ".bad-*"); len(copies) != 1 {
		t.Fatalf("set aside: %v", copies)
	}
}

// Garbage in transactionChecks.json is set aside at start, not a refusal.
func TestGarbageTxnChecksFile(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "transactionChecks.json"), []byte("{\x00truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, dir, nil)
	defer b.Close()
	waitFor(t, func() bool { return b.stats.configSetAside.Load() == 1 }, "transactionChecks.json set aside")
	if copies, _ := filepath.Glob(filepath.Join(cfgDir, "transactionChecks.json.bad-*")); len(copies) != 1 {
		t.Fatalf("set aside: %v", copies)
	}
}
