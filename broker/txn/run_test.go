package txn

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestRun: the check service on the real clock. While Config.Master says
// no, its rounds are skipped: nothing is sent however many ticks pass;
// once master, an open half past the timeout is checked back; once stop
// closes Run returns.
func TestRun(t *testing.T) {
	var master atomic.Bool
	var asked atomic.Int64
	r := &rig{t: t, fs: vfs.NewMem(), clock: newClock(), now: time.Now, progress: &memProgress{offs: map[string]int64{}},
		mut: func(c *Config) {
			c.CheckInterval, c.Timeout = 5*time.Millisecond, time.Millisecond
			c.Master = func() bool { asked.Add(1); return master.Load() }
		}}
	r.mu.online = map[string]*producer{}
	r.open()
	defer r.st.Close()
	r.setProducer("p1", "pg", false, true)
	r.prepare("tx", 0, "a", map[string]string{PropTranPrepared: "true", PropProducerGroup: "pg"})
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		r.svc.Run(stop)
		close(done)
	}()
	waitUntil(t, func() bool { return asked.Load() >= 5 }, "five ticks")
	if got := r.takeSent(); len(got) != 0 {
		t.Fatalf("%d check-backs sent while not master", len(got))
	}
	master.Store(true)
	waitUntil(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.mu.sent) > 0
	}, "a check-back")
	close(stop)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after stop")
	}
}

// TestNewNeedsConfig: New refuses a Config without its required parts.
func TestNewNeedsConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New accepted an empty Config")
	}
}

func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s within 30 s", what)
		}
	}
}

// TestGarbageChecksFile: a transactionChecks.json that does not decode is
// set aside (<name>.bad-<stamp>, counted) and the open halves count their
// check-backs afresh; New does not fail.
func TestGarbageChecksFile(t *testing.T) {
	var setAside atomic.Int64
	r := newRig(t, func(c *Config) { c.FilesSetAside = &setAside })
	r.prepare("tx", 0, "a", map[string]string{PropTranPrepared: "true", PropProducerGroup: "pg"})
	if err := r.fs.MkdirAll(configDir); err != nil {
		t.Fatal(err)
	}
	f, err := r.fs.Create(filepath.Join(configDir, "transactionChecks.json"), vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("{\x00truncated"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.restart()
	if setAside.Load() != 1 {
		t.Fatalf("%d files set aside, want 1", setAside.Load())
	}
	names, err := r.fs.List(configDir)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, n := range names {
		if strings.HasPrefix(n, "transactionChecks.json.bad-") {
			bad++
		}
	}
	if bad != 1 {
		t.Fatalf("config dir holds %v: want one set-aside copy", names)
	}
	if n := r.svc.state().checksOf(0); n != 0 {
		t.Fatalf("half 0 has %d checks after its file was set aside, want 0", n)
	}
}

// TestResyncSeesReplicatedSettlements: a replica built its state while a
// half was open; the master settled it and the op record reached this
// replica's store by replication, not through its state. Until Resync the
// half looks open (a check-back would go out, and a commit answer would
// store a second final message); after Resync it is settled.
func TestResyncSeesReplicatedSettlements(t *testing.T) {
	r := newRig(t, nil)
	h := r.prepare("tx", 0, "replicated", map[string]string{PropTranPrepared: "true", PropProducerGroup: "pg", propUniqKey: "u-1"})
	replica, err := New(r.svc.cfg) // the replica's Service, made while the half was open
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.End("pg", Commit, []Ref{{h.QueueOffset, h.PhysOffset}}); err != nil {
		t.Fatal(err)
	}
	if got := replica.state().state(h.QueueOffset); got != txnOpen {
		t.Fatalf("before Resync the replica's state says %d, want open (the test's premise)", got)
	}
	if err := replica.Resync(); err != nil {
		t.Fatal(err)
	}
	if got := replica.state().state(h.QueueOffset); got < 0 {
		t.Fatalf("after Resync the replicated settlement is not seen: %d", got)
	}
	r.setProducer("p1", "pg", false, true)
	r.clock.Add(time.Hour)
	replica.round(make(chan struct{}))
	if sent := r.takeSent(); len(sent) != 0 {
		t.Fatalf("the resynced replica checked back a settled half: %+v", sent)
	}
}
