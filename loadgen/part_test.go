package loadgen

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// shareBarrier stands in for the coordinator of n shares: Ready returns
// one start time once all are ready, Drained returns once all are
// draining and every group has every acknowledged message (or a deadline
// passes).
type shareBarrier struct {
	n      int
	groups int64
	parts  []*Part
	mu     sync.Mutex
	ready  int
	start  chan time.Time
	drain  int
	done   chan bool
}

func newShareBarrier(n int, groups int64) *shareBarrier {
	return &shareBarrier{n: n, groups: groups, start: make(chan time.Time, n), done: make(chan bool, n)}
}

func (b *shareBarrier) Ready(ctx context.Context) (time.Time, error) {
	b.mu.Lock()
	if b.ready++; b.ready == b.n {
		at := time.Now().Add(50 * time.Millisecond)
		for range b.n {
			b.start <- at
		}
	}
	b.mu.Unlock()
	select {
	case at := <-b.start:
		return at, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func (b *shareBarrier) Drained(ctx context.Context) bool {
	b.mu.Lock()
	if b.drain++; b.drain == b.n {
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			caught := false
			for !caught && time.Now().Before(deadline) {
				var acked, received int64
				for _, p := range b.parts {
					c := p.Counts()
					acked, received = acked+c.Acked, received+c.Received
				}
				caught = received >= b.groups*acked
				time.Sleep(5 * time.Millisecond)
			}
			for range b.n {
				b.done <- caught
			}
		}()
	}
	b.mu.Unlock()
	select {
	case ok := <-b.done:
		return ok
	case <-ctx.Done():
		return false
	}
}

// runShares runs w in n shares against d and merges their results.
func runShares(t *testing.T, d Driver, w Workload, n int) (*Result, []*Result) {
	t.Helper()
	w.EnsureDefaults()
	prods, cons := Split(&w, n)
	b := newShareBarrier(n, int64(w.ConsumerGroups))
	for i := range n {
		b.parts = append(b.parts, &Part{Tag: 7, Producers: prods[i], Consumers: cons[i], CreateTopics: i == 0,
			Ready: b.Ready, Drained: b.Drained})
	}
	results := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Run(context.Background(), d, w, Options{Out: &bytes.Buffer{}, Part: b.parts[i]})
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "share %d", i)
	}
	merged, err := Merge(w, results)
	require.NoError(t, err)
	return merged, results
}

// TestSharesMerge: two shares, each producing to both consumer groups
// and consuming for one: the merged result's counts are the sum of the
// shares', and its histograms hold every share's samples.
func TestSharesMerge(t *testing.T) {
	d := newMemDriver()
	d.queued = true
	w := quick(Workload{MessageSize: 32, Producers: 2, ConsumerGroups: 2, Rate: 400})
	merged, shares := runShares(t, d, w, 2)
	var acked, received, sendN, e2eN, lagN int64
	for _, s := range shares {
		acked, received = acked+s.Acked, received+s.Received
		sendN, e2eN, lagN = sendN+s.SendLatencyUs.Count, e2eN+s.E2ELatencyUs.Count, lagN+s.SendLagUs.Count
		require.NotEmpty(t, s.Deliveries)
		require.Equal(t, shares[0].MeasuredFrom, s.MeasuredFrom, "one window")
	}
	require.Greater(t, acked, int64(50))
	require.Equal(t, acked, merged.Acked)
	require.Equal(t, received, merged.Received)
	require.Equal(t, 2*merged.Acked, merged.Received, "each group got each message, from either share's producer")
	require.Zero(t, merged.NeverReceived)
	require.Zero(t, merged.Duplicates)
	require.True(t, merged.Drained)
	require.Equal(t, sendN, merged.SendLatencyUs.Count)
	require.Equal(t, e2eN, merged.E2ELatencyUs.Count)
	require.Equal(t, lagN, merged.SendLagUs.Count)
	send, e2e, err := merged.Histograms()
	require.NoError(t, err)
	require.Equal(t, sendN, send.TotalCount())
	require.Equal(t, e2eN, e2e.TotalCount())
	// The intervals line up by their number on the grid: each merged one
	// sums the shares' of that number.
	rates := map[int]float64{}
	for _, s := range shares {
		for _, iv := range s.Intervals {
			require.GreaterOrEqual(t, iv.Share.Index, 0, "a warm-up interval")
			rates[iv.Share.Index] += iv.PublishRate
		}
	}
	require.Len(t, merged.Intervals, len(rates))
	for i, k := range slices.Sorted(maps.Keys(rates)) {
		require.Nil(t, merged.Intervals[i].Share)
		require.InDelta(t, rates[k], merged.Intervals[i].PublishRate, 1e-6)
	}
	require.Nil(t, merged.Deliveries)
}

// TestMergeDeliveriesAcrossShares: a message two shares' consumers of one
// group received counts once and as a duplicate; one no share received
// is never received; a share whose every send failed has no sets and
// merges; a set larger than the sends could make is refused.
func TestMergeDeliveriesAcrossShares(t *testing.T) {
	w := Workload{MessageSize: 16, Producers: 1}
	w.EnsureDefaults()
	a, b := newDeliveries(1, 1, 1), newDeliveries(1, 1, 1)
	for seq := range 10 {
		a.ack(0, int64(seq))
	}
	p := make([]byte, headerSize)
	for seq := range 9 { // a gets 0..4, b gets 3..8; 9 never arrives
		putHeader(p, 1, a.tag, 0, int64(seq))
		if seq <= 4 {
			_, _, _ = a.received(0, p)
		}
		putHeader(p, 1, b.tag, 0, int64(seq))
		if seq >= 3 {
			_, _, _ = b.received(0, p)
		}
	}
	setsA, err := a.export([]int{0})
	require.NoError(t, err)
	setsB, err := b.export(nil)
	require.NoError(t, err)
	res, err := Merge(w, []*Result{
		{Share: true, Sent: 10, Acked: 10, Received: 5, Deliveries: setsA},
		{Share: true, Received: 6, Deliveries: setsB},
		{Share: true, Sent: 3, Errors: 3}, // every send failed: no sets
	})
	require.NoError(t, err)
	require.Equal(t, int64(9), res.Received)
	require.Equal(t, int64(1), res.NeverReceived)
	require.Equal(t, int64(2), res.Duplicates, "3 and 4 came to both")

	far := newDeliveries(1, 1, 1)
	far.ack(0, 200)
	setsFar, err := far.export([]int{0})
	require.NoError(t, err)
	_, err = Merge(w, []*Result{{Share: true, Sent: 1, Acked: 1, Deliveries: setsFar}})
	require.ErrorContains(t, err, "more messages than were sent", "a set is bounded by the sends")
	_, err = Merge(w, []*Result{{Sent: 1}})
	require.ErrorContains(t, err, "not a share's")
}
