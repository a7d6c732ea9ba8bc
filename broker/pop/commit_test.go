package pop

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// gateFS holds every Sync of pop.wal until the gate opens.
type gateFS struct {
	vfs.FS
	gate chan struct{}
	in   chan struct{} // a Sync waits at the gate
}

func (g *gateFS) Open(name string, o vfs.OpenOptions) (vfs.File, error) {
	f, err := g.FS.Open(name, o)
	if err != nil || !strings.HasSuffix(name, walName) {
		return f, err
	}
	return &gateFile{File: f, g: g}, nil
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f *gateFile) Sync() error {
	select {
	case f.g.in <- struct{}{}:
	default:
	}
	<-f.g.gate
	return f.File.Sync()
}

// Pops that arrive while pop.wal is being synced share the next sync:
// 30 concurrent pops behind one blocked sync take at most a third as many
// syncs, and every one of them is answered.
func TestGroupCommit(t *testing.T) {
	r := newRig(t, 1)
	const n = 30
	r.send(0, "a", msgs(n)...)
	g := &gateFS{FS: r.fs, gate: make(chan struct{}), in: make(chan struct{}, 1)}
	svc, err := New(Config{Store: r.st, FS: g, Dir: "/s/pop-gated", BrokerName: broker, Now: r.clock.Now, Logger: quietLogger(),
		DLQ: func(g string) (string, error) { return "%DLQ%" + g, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Close() }()
	var wg sync.WaitGroup
	got := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := svc.Pop(context.Background(), r.req(1, time.Minute))
			if err != nil {
				t.Error(err)
			}
			got <- len(res.Records)
		}()
	}
	<-g.in // a leader is syncing
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		svc.mu.Lock()
		w := svc.mu.seq
		svc.mu.Unlock()
		if w == n {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("only %d of %d pops wrote their records", w, n)
		}
	}
	close(g.gate)
	wg.Wait()
	close(got)
	total := 0
	for k := range got {
		total += k
	}
	if total != n {
		t.Fatalf("%d messages handed out, want %d", total, n)
	}
	if s := svc.syncs.Load(); s > n/3 {
		t.Fatalf("%d pops took %d syncs, want at most %d", n, s, n/3)
	} else {
		t.Logf("%d pops, %d syncs", n, s)
	}
}

// reopen closes the service and the store and opens both again.
func (r *rig) reopen() {
	r.t.Helper()
	if err := r.svc.Close(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.open()
}

// With a SyncInterval a pop is answered before pop.wal is synced. A power
// loss before the background sync goes back to an earlier state: what was
// popped is handed out again, never lost. Once synced, the in-flight
// state survives a power loss.
func TestSyncIntervalPowerLoss(t *testing.T) {
	r := newRig(t, 1)
	r.send(0, "a", "a", "b", "c")
	r.syncInterval = time.Hour
	r.reopen()
	q := r.req(3, 10*time.Second)
	if got := r.pop(q); !slices.Equal(bodies(got), []string{"a", "b", "c"}) {
		t.Fatalf("popped %v", bodies(got))
	}
	if n := r.svc.syncs.Load(); n != 0 {
		t.Fatalf("%d syncs before the interval", n)
	}
	r.crash()
	if got := r.pop(q); !slices.Equal(bodies(got), []string{"a", "b", "c"}) || got[0].times != 0 {
		t.Fatalf("after a power loss before the sync: %+v, want a, b and c handed out again", got)
	}
	r.syncInterval = 10 * time.Millisecond
	r.crash()
	got := r.pop(q)
	if !slices.Equal(bodies(got), []string{"a", "b", "c"}) {
		t.Fatalf("popped %v", bodies(got))
	}
	if err := r.svc.Ack(&got[0].handle); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); r.svc.syncs.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the background sync never ran")
		}
	}
	r.crash()
	if again := r.pop(q); len(again) != 0 {
		t.Fatalf("after a synced power loss, handed out inside the invisible time: %v", bodies(again))
	}
	r.clock.Add(10 * time.Second)
	if again := r.pop(q); !slices.Equal(bodies(again), []string{"b", "c"}) || again[0].times != 1 {
		t.Fatalf("after the invisible time: %+v, want b and c once more", again)
	}
}
