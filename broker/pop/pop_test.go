package pop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// More consumers than queues: three pop loops on one queue see every
// message exactly once when all acknowledge.
func TestMoreConsumersThanQueues(t *testing.T) {
	r := newRig(t, 1)
	const n = 60
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for c := 0; c < 3; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					return
				}
				q := r.req(4, time.Minute)
				q.Poll = 50 * time.Millisecond
				res, err := r.svc.Pop(context.Background(), q)
				if err != nil {
					t.Error(err)
					return
				}
				for _, p := range decode(t, q, &res) {
					mu.Lock()
					seen[p.body]++
					mu.Unlock()
					if err := r.svc.Ack(&p.handle); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	r.send(0, "a", msgs(n)...)
	wg.Wait()
	for _, b := range msgs(n) {
		if seen[b] != 1 {
			t.Errorf("%s received %d times, want once", b, seen[b])
		}
	}
	if st := r.svc.Stats(); len(st) != 1 || st[0].InFlight != 0 || st[0].Redelivered != 0 {
		t.Errorf("stats %+v, want nothing in flight or redelivered", st)
	}
}

// A message not acknowledged comes back after its invisible time with
// its reconsume times raised; past the group's max it goes to the DLQ.
func TestRedeliveryThenDLQ(t *testing.T) {
	r := newRig(t, 2)
	r.send(1, "a", "x")
	q := r.req(8, 10*time.Second)
	got := r.pop(q)
	if len(got) != 1 || got[0].times != 0 {
		t.Fatalf("first pop %+v", got)
	}
	if again := r.pop(q); len(again) != 0 {
		t.Fatalf("an invisible message handed out again: %v", bodies(again))
	}
	for want := int32(1); want <= r.maxRe; want++ {
		r.clock.Add(10 * time.Second)
		got = r.pop(q)
		if len(got) != 1 || got[0].body != "x" || got[0].times != want {
			t.Fatalf("redelivery %d: %+v", want, got)
		}
	}
	r.clock.Add(10 * time.Second)
	if got = r.pop(q); len(got) != 0 {
		t.Fatalf("past max reconsume times still handed out: %+v", got)
	}
	// the DLQ's index is built by the store's dispatcher: wait for it
	for end := time.Now().Add(30 * time.Second); r.st.MaxQueueOffset("%DLQ%"+group, 0) < 1 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	dlq, err := r.st.GetMessages("%DLQ%"+group, 0, 0, 10, 1<<20, nil)
	if err != nil || len(dlq.Records) != 1 {
		t.Fatalf("DLQ holds %d records (err %v), want 1", len(dlq.Records), err)
	}
	st := r.svc.Stats()[0]
	if st.InFlight != 0 || st.Redelivered != int64(r.maxRe) || st.DeadLetters != 1 {
		t.Errorf("stats %+v", st)
	}
}

// ChangeInvisible extends a message's invisible time and makes the old
// handle stale; an acknowledged message's handle is refused.
func TestChangeInvisibleAndStaleHandle(t *testing.T) {
	r := newRig(t, 1)
	r.send(0, "a", "x")
	q := r.req(1, 10*time.Second)
	p := r.pop(q)[0]
	r.clock.Add(5 * time.Second)
	pt, err := r.svc.ChangeInvisible(&p.handle, 60_000)
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Add(30 * time.Second) // past the first invisible time, inside the new one
	if again := r.pop(q); len(again) != 0 {
		t.Fatalf("handed out inside its extended invisible time: %v", bodies(again))
	}
	if err := r.svc.Ack(&p.handle); !errors.Is(err, ErrStale) {
		t.Fatalf("ack with the handle before the change: %v, want ErrStale", err)
	}
	e, _ := ParseExtraInfo(p.handle.Extra)
	e.PopTime = pt
	fresh := p.handle
	fresh.Extra = e.String()
	if err := r.svc.Ack(&fresh); err != nil {
		t.Fatal(err)
	}
	if err := r.svc.Ack(&fresh); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "not in flight") {
		t.Fatalf("second ack: %v, want a stale handle", err)
	}
	r.clock.Add(time.Hour)
	if again := r.pop(q); len(again) != 0 {
		t.Fatalf("an acknowledged message handed out again: %v", bodies(again))
	}
}

// After a power loss the state is what was acknowledged to clients: an
// unacknowledged message comes back after its invisible time, an
// acknowledged one never.
func TestCrashKeepsInFlight(t *testing.T) {
	r := newRig(t, 1)
	r.send(0, "a", "a", "b", "c")
	q := r.req(3, 10*time.Second)
	got := r.pop(q)
	if !slices.Equal(bodies(got), []string{"a", "b", "c"}) {
		t.Fatalf("popped %v", bodies(got))
	}
	if err := r.svc.Ack(&got[1].handle); err != nil {
		t.Fatal(err)
	}
	r.crash()
	if again := r.pop(q); len(again) != 0 {
		t.Fatalf("after the crash, handed out inside the invisible time: %v", bodies(again))
	}
	if err := r.svc.Ack(&got[0].handle); err != nil {
		t.Fatalf("a handle from before the crash: %v", err)
	}
	r.clock.Add(10 * time.Second)
	again := r.pop(q)
	if !slices.Equal(bodies(again), []string{"c"}) || again[0].times != 1 {
		t.Fatalf("after the crash and the invisible time: %+v, want c once more", again)
	}
	r.send(0, "a", "d")
	if next := r.pop(q); !slices.Equal(bodies(next), []string{"d"}) {
		t.Fatalf("after the crash the cursor gave %v, want d", bodies(next))
	}
}

// A pop waits for an arrival on its topic.
func TestLongPollWokenByArrival(t *testing.T) {
	r := newRig(t, 4)
	q := r.req(1, time.Minute)
	q.Poll = 25 * time.Second
	done := make(chan []popped, 1)
	go func() {
		res, err := r.svc.Pop(context.Background(), q)
		if err != nil {
			t.Error(err)
		}
		done <- decode(t, q, &res)
	}()
	for end := time.Now().Add(20 * time.Second); r.svc.held.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the pop never waited")
		}
	}
	r.send(3, "a", "late")
	if got := <-done; !slices.Equal(bodies(got), []string{"late"}) {
		t.Fatalf("woken with %v", bodies(got))
	}
}

// Tags filter: a message of another tag is never handed out.
func TestTagFilter(t *testing.T) {
	r := newRig(t, 1)
	r.send(0, "a", "a1")
	r.send(0, "b", "b1")
	r.send(0, "a", "a2")
	q := r.req(8, time.Minute)
	want := record.TagsCode("a")
	q.TagMatch = func(c int64) bool { return c == want }
	if got := r.pop(q); !slices.Equal(bodies(got), []string{"a1", "a2"}) {
		t.Fatalf("popped %v", bodies(got))
	}
}

func TestBadInput(t *testing.T) {
	r := newRig(t, 2)
	for _, q := range []*Request{
		{Group: group, Topic: topic, QueueID: 0, Queues: 2, MaxMsgs: 1 << 30, Invisible: time.Minute},
		{Group: group, Topic: topic, QueueID: 0, Queues: 2, MaxMsgs: 0, Invisible: time.Minute},
		{Group: group, Topic: topic, QueueID: 2, Queues: 2, MaxMsgs: 1, Invisible: time.Minute},
		{Group: group, Topic: topic, QueueID: 0, Queues: 2, MaxMsgs: 1, Invisible: 0},
	} {
		if _, err := r.svc.Pop(context.Background(), q); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: %v, want ErrBadRequest", q, err)
		}
	}
	for _, extra := range []string{"", "1 2 3", "x 1 1 0 0 broker-a 0 0", "0 1 1 0 9 broker-a 0 0",
		"0 1 1 0 0 broker-b 0 0", "0 1 1 0 0 broker-a 1 0", strings.Repeat("1 ", 1000)} {
		h := &Handle{Group: group, Topic: topic, QueueID: 0, Offset: 0, Extra: extra}
		if err := r.svc.Ack(h); !errors.Is(err, ErrBadExtraInfo) {
			t.Errorf("ack %q: %v, want ErrBadExtraInfo", extra, err)
		}
	}
	h := &Handle{Group: group, Topic: topic, QueueID: 0, Offset: 5, Extra: "5 1 1 0 0 broker-a 0 5"}
	if err := r.svc.Ack(h); !errors.Is(err, ErrStale) {
		t.Errorf("ack of what was never popped: %v, want ErrStale", err)
	}
}

// A torn or corrupt tail of pop.wal is cut: the state before it stands.
func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		harm func(b []byte) []byte
	}{
		{"torn", func(b []byte) []byte { return b[:len(b)-3] }},
		{"flipped", func(b []byte) []byte { b[len(b)-2] ^= 0x40; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			k := qkey{group, topic, 0}
			b = appendRec(b, &walRec{kind: kindCursor, group: k.group, topic: k.topic, offset: 2})
			b = appendRec(b, &walRec{kind: kindPopped, group: k.group, topic: k.topic, offset: 1, popTime: 5, deadline: 9})
			b = appendRec(b, &walRec{kind: kindRemoved, group: k.group, topic: k.topic, offset: 1})
			fs := vfs.NewMem()
			if err := fs.MkdirAll("/p"); err != nil {
				t.Fatal(err)
			}
			if err := vfs.WriteFileAtomic(fs, "/p/"+walName, tc.harm(b)); err != nil {
				t.Fatal(err)
			}
			var got []walRec
			if err := readWAL(fs, "/p", func(r *walRec) { got = append(got, *r) }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[1].kind != kindPopped || got[1].popTime != 5 || got[1].deadline != 9 {
				t.Fatalf("replayed %+v, want the cursor and the pop", got)
			}
		})
	}
}

// Past CompactBytes the file is rewritten as what is in flight, and a
// restart reads the same state from it.
func TestCompaction(t *testing.T) {
	r := newRig(t, 1)
	r.svc.cfg.CompactBytes = 2048
	r.send(0, "a", msgs(40)...)
	q := r.req(1, time.Minute)
	var kept popped
	for i := range 40 {
		p := r.pop(q)[0]
		if i == 17 {
			kept = p
			continue
		}
		if err := r.svc.Ack(&p.handle); err != nil {
			t.Fatal(err)
		}
	}
	size, err := r.fs.Stat(popDir + "/" + walName)
	if err != nil || size > 2048 {
		t.Fatalf("pop.wal is %d bytes (%v), want it compacted under 2048", size, err)
	}
	r.crash()
	r.clock.Add(time.Minute)
	again := r.pop(r.req(8, time.Minute))
	if len(again) != 1 || again[0].body != kept.body {
		t.Fatalf("after compaction and a crash: %v, want %s alone", bodies(again), kept.body)
	}
}
