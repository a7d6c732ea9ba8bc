package broker

import (
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

func testConfig(t *testing.T, fs vfs.FS) *Config {
	t.Helper()
	c := &Config{StorePathRootDir: "/store", FS: fs}
	c.EnsureDefaults()
	return c
}

func TestTopicManagerPersist(t *testing.T) {
	fs := vfs.NewMem()
	cfg := testConfig(t, fs)
	m := newTopicManager(fs, cfg)
	if _, ok := m.get(AutoCreateTopicKey); !ok {
		t.Fatal("TBW102 missing with autoCreateTopicEnable")
	}
	if ch, err := m.update(newTopicConfig("orders", 8, PermRead|PermWrite)); err != nil || !ch {
		t.Fatal(ch, err)
	}
	if ch, _ := m.update(newTopicConfig("orders", 8, PermRead|PermWrite)); ch {
		t.Fatal("same config reported as a change")
	}
	tc, created, err := m.createInSend("auto1", AutoCreateTopicKey, 4, 0)
	if err != nil || !created || tc.WriteQueueNums != 4 || tc.Perm != PermRead|PermWrite {
		t.Fatalf("createInSend = %+v %v %v", tc, created, err)
	}
	if _, _, err := m.createInSend("bad topic", AutoCreateTopicKey, 4, 0); err == nil {
		t.Fatal("bad name accepted")
	}
	_, v1 := m.snapshot()

	m2 := newTopicManager(fs, cfg)
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	if tc, ok := m2.get("orders"); !ok || tc.ReadQueueNums != 8 {
		t.Fatalf("reloaded orders = %+v %v", tc, ok)
	}
	if _, v2 := m2.snapshot(); v2.Counter != v1.Counter {
		t.Fatalf("data version %v, want %v", v2, v1)
	}

	cfg2 := *cfg
	cfg2.AutoCreateTopicEnable = false
	m3 := newTopicManager(fs, &cfg2)
	if err := m3.load(); err != nil {
		t.Fatal(err)
	}
	if _, ok := m3.get(AutoCreateTopicKey); ok {
		t.Fatal("TBW102 kept after auto-creation was disabled")
	}
	if _, _, err := m3.createInSend("auto2", AutoCreateTopicKey, 4, 0); err == nil {
		t.Fatal("auto-created with auto-creation off")
	}
}

type fakePeer struct {
	name     string
	notified []string
}

func (p *fakePeer) notifyConsumerIdsChanged(g string) { p.notified = append(p.notified, g) }
func (p *fakePeer) remote() string                    { return p.name }

func TestClientManagerMembership(t *testing.T) {
	m := newClientManager(120 * time.Second)
	t0 := time.Unix(0, 0)
	a, b := &fakePeer{name: "a"}, &fakePeer{name: "b"}
	hb := func(id string) Heartbeat {
		return Heartbeat{ClientID: id, Producers: []string{"pg"},
			Consumers: []ConsumerHeartbeat{{Group: "cg", Subscriptions: []Subscription{{Topic: "t", SubString: "*"}}}}}
	}
	if ch := m.heartbeat(a, hb("A"), t0); len(ch) != 1 {
		t.Fatalf("first heartbeat changed %v", ch)
	}
	if ch := m.heartbeat(a, hb("A"), t0.Add(time.Second)); len(ch) != 0 {
		t.Fatalf("repeat heartbeat changed %v", ch)
	}
	m.heartbeat(b, hb("B"), t0.Add(100*time.Second))
	if ids := m.consumerIDs("cg"); len(ids) != 2 || ids[0] != "A" {
		t.Fatal(ids)
	}
	if s, ok := m.subscription("cg", "t"); !ok || s.SubString != "*" {
		t.Fatal(s, ok)
	}
	dropped, changed := m.expire(t0.Add(125 * time.Second))
	if len(dropped) != 1 || dropped[0] != a || len(changed) != 1 {
		t.Fatalf("expire: %v %v", dropped, changed)
	}
	if ch := m.closed(b); len(ch) != 1 || len(m.consumerIDs("cg")) != 0 {
		t.Fatalf("closed: %v", ch)
	}
	if pg, cg, n := m.counts(); pg+cg+n != 0 {
		t.Fatal(pg, cg, n)
	}
}

func TestLockManager(t *testing.T) {
	m := newLockManager(time.Minute)
	t0 := time.Unix(0, 0)
	q := []QueueKey{{"t", 0}, {"t", 1}}
	if got := m.tryLock("g", "A", q, t0); len(got) != 2 {
		t.Fatal(got)
	}
	if got := m.tryLock("g", "B", q, t0.Add(time.Second)); len(got) != 0 {
		t.Fatal("B took A's locks", got)
	}
	if got := m.tryLock("g", "B", q, t0.Add(2*time.Minute)); len(got) != 2 {
		t.Fatal("expired locks not taken", got)
	}
	m.unlock("g", "A", q)
	if id, ok := m.holder("g", q[0], t0.Add(2*time.Minute)); !ok || id != "B" {
		t.Fatal("A unlocked B's lock")
	}
}

func TestTagFilter(t *testing.T) {
	f, err := parseSubscription("TAG", "a || b ||c")
	if err != nil || f == nil {
		t.Fatal(f, err)
	}
	if !f.match(record.TagsCode("c")) || f.match(record.TagsCode("d")) || f.match(0) {
		t.Fatal("match")
	}
	if f, _ := parseSubscription("", "*"); f != nil || !f.match(12) {
		t.Fatal("* is all")
	}
	if _, err := parseSubscription("SQL92", "a > 1"); err == nil {
		t.Fatal("SQL92 accepted")
	}
}
