package repair

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage"
)

type fakeStore struct {
	mu       sync.Mutex
	damaged  []storage.DamagedRange
	repaired map[int64][]byte
}

func (f *fakeStore) Damaged() []storage.DamagedRange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]storage.DamagedRange(nil), f.damaged...)
}

func (f *fakeStore) RepairRange(from int64, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if data[0] == 'x' {
		return errors.New("bad copy")
	}
	for i, d := range f.damaged {
		if d.From == from {
			f.damaged = append(f.damaged[:i], f.damaged[i+1:]...)
			f.repaired[from] = data
			return nil
		}
	}
	return errors.New("not damaged")
}

// TestRound: each damaged range is fetched from the first peer that gives
// a good copy of the right length; a bad copy or a failing peer moves on
// to the next; a range no peer supplies stays pending until it has failed
// MaxAttempts rounds over GiveUpAfter, then reads may pass it, and it is
// still tried now and then.
func TestRound(t *testing.T) {
	st := &fakeStore{repaired: map[int64][]byte{},
		damaged: []storage.DamagedRange{{From: 100, To: 110}, {From: 200, To: 204}, {From: 300, To: 305}}}
	var held300 atomic.Bool
	fetch := func(_ context.Context, addr string, from, to int64) ([]byte, error) {
		switch {
		case addr == "down":
			return nil, errors.New("connection refused")
		case from == 300 && !held300.Load():
			return nil, errors.New("not held here")
		case addr == "liar":
			return []byte("xxxxxxxxxxxx")[:to-from], nil
		case from == 200:
			return []byte("abc"), nil // a record boundary elsewhere: wrong length
		}
		return make([]byte, to-from), nil
	}
	r, err := New(Config{Store: st, Peers: func() []string { return []string{"down", "liar", "good"} }, Fetch: fetch,
		MaxAttempts: 2, GiveUpAfter: time.Nanosecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Round(); n != 1 || st.repaired[100] == nil {
		t.Fatalf("first round repaired %d (%v), want [100, 110)", n, st.repaired)
	}
	if !r.Pending(201) || !r.Pending(302) || r.Pending(150) {
		t.Fatalf("pending: 201 %v, 302 %v, 150 %v", r.Pending(201), r.Pending(302), r.Pending(150))
	}
	r.Round()
	if r.Pending(201) || r.Pending(302) {
		t.Fatal("ranges no peer supplies are still pending after MaxAttempts rounds")
	}
	if st := r.Status(); st.Damaged != 2 || st.Unrepairable != 2 || st.Repaired != 1 || st.LastErr == "" {
		t.Fatalf("status %+v", st)
	}
	// A range given up is still tried (every GiveUpAfter): once a peer
	// holds it, it is repaired.
	held300.Store(true)
	if n := r.Round(); n != 1 || st.repaired[300] == nil {
		t.Fatalf("given-up range not repaired once supplied: %d %v", n, st.repaired)
	}
	// No peer: nothing to wait for.
	r2, _ := New(Config{Store: &fakeStore{damaged: []storage.DamagedRange{{From: 1, To: 2}}}, Peers: func() []string { return nil },
		Fetch: fetch, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if r2.Pending(1) {
		t.Fatal("pending with no peer to ask")
	}
}

// TestRememberedPeers: a replica left with no current peer (its master
// died) still asks the replicas it was given before, current ones first;
// a damaged range that appears between rounds is fetched without a kick.
func TestRememberedPeers(t *testing.T) {
	st := &fakeStore{repaired: map[int64][]byte{}}
	var mu sync.Mutex
	cur := []string{"master"}
	var asked []string
	fetch := func(_ context.Context, addr string, from, to int64) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, addr)
		if addr != "other-slave" {
			return nil, errors.New("connection refused")
		}
		return make([]byte, to-from), nil
	}
	peers := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(cur)
	}
	r, err := New(Config{Store: st, Peers: peers, Fetch: fetch, Watch: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.peers() // the master, then (as master once) its slave
	mu.Lock()
	cur = []string{"other-slave"}
	mu.Unlock()
	r.peers()
	mu.Lock()
	cur = nil // the master died: no current peer
	mu.Unlock()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { r.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	st.mu.Lock()
	st.damaged = []storage.DamagedRange{{From: 10, To: 20}}
	st.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for len(st.Damaged()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the damaged range was not repaired from a remembered peer")
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != "other-slave" {
		t.Fatalf("asked %v, want the remembered other-slave first (most recent)", asked)
	}
}
