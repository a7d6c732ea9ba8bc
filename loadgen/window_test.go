package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/require"
)

// dueInWindow counts the schedule's messages (one producer at rate) due in
// the result's window.
func dueInWindow(res *Result, rate float64) int64 {
	gap := time.Duration(float64(time.Second) / rate)
	var n int64
	for due := res.Start; due.Before(res.MeasuredTo); due = due.Add(gap) {
		if !due.Before(res.MeasuredFrom) {
			n++
		}
	}
	return n
}

// stampLog keeps every stamp a driver was asked to send.
type stampLog struct {
	mu     sync.Mutex
	stamps []int64
}

func (l *stampLog) add(ns int64) { l.mu.Lock(); l.stamps = append(l.stamps, ns); l.mu.Unlock() }

func (l *stampLog) within(from, to time.Time) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.stamps {
		if s >= from.UnixNano() && s < to.UnixNano() {
			n++
		}
	}
	return n
}

// TestWindowEndStallIsRecorded: a 400 ms stall 100 ms before the window
// closes holds back ~50 messages due in the window. Every one of them is
// still sent and recorded (before, those not sent when the window closed
// were neither), and schedule lag sees the stall.
func TestWindowEndStallIsRecorded(t *testing.T) {
	const rate = 500.0
	d := newMemDriver()
	var log stampLog
	d.sent = log.add
	stalled := false
	d.stall = func(n int64) {
		if n == 300 && !stalled { // due at 600 ms: 100 ms before the end of [100, 700) ms
			stalled = true
			time.Sleep(400 * time.Millisecond)
		}
	}
	var out bytes.Buffer
	res, err := Run(context.Background(), d, quick(Workload{MessageSize: 32, Rate: rate}), Options{Out: &out})
	require.NoError(t, err, out.String())
	require.True(t, stalled)
	due := dueInWindow(res, rate)
	require.Greater(t, due, int64(200))
	require.Equal(t, due, log.within(res.MeasuredFrom, res.MeasuredTo), "every message due in the window was sent")
	require.Equal(t, due, res.SendLatencyUs.Count, "every message due in the window is in the send latency")
	require.Equal(t, due, res.E2ELatencyUs.Count, "and in the e2e latency")
	require.Equal(t, due, res.SendLagUs.Count, "and in the schedule lag")
	require.GreaterOrEqual(t, res.SendLagUs.Max, int64(300_000), "schedule lag saw the stall")
	require.GreaterOrEqual(t, res.SendLatencyUs.Max, int64(350_000))
	require.Zero(t, res.Errors)
	require.False(t, res.ProducerGraceExpired)
}

// TestWindowEndGraceRunsOut: a producer blocked past the window's end
// for longer than the grace (Drain) ends the run anyway: its blocked send
// fails and the messages due in the window and never sent are errors
// (unsent), each with its lag; nothing due in the window goes uncounted.
func TestWindowEndGraceRunsOut(t *testing.T) {
	const rate = 500.0
	d := newMemDriver()
	var once sync.Once
	d.stallCtx = func(ctx context.Context, n int64) error {
		if n != 300 {
			return nil
		}
		var err error
		once.Do(func() {
			select {
			case <-ctx.Done(): // the grace ran out
				err = ctx.Err()
			case <-time.After(time.Minute):
				err = errors.New("send was never cancelled")
			}
		})
		return err
	}
	w := quick(Workload{MessageSize: 32, Rate: rate})
	w.Drain = 500 * time.Millisecond
	var out bytes.Buffer
	res, err := Run(context.Background(), d, w, Options{Out: &out})
	require.NoError(t, err, out.String())
	require.True(t, res.ProducerGraceExpired)
	due := dueInWindow(res, rate)
	require.Greater(t, res.Unsent, int64(10))
	require.Equal(t, int64(1)+res.Unsent, res.Errors, "the blocked send and the unsent")
	require.Equal(t, due, res.SendLatencyUs.Count+res.Errors, "every message due in the window is a figure or an error")
	require.GreaterOrEqual(t, res.SendLagUs.Max, int64(400_000), "the unsent's lag is the wait")
	require.Contains(t, out.String(), "never sent")
}

// TestDuplicatesAndLosses: a redelivered message counts once (its
// redelivery apart), a lost one is counted as never received.
func TestDuplicatesAndLosses(t *testing.T) {
	d := newMemDriver()
	var mu sync.Mutex
	var dups, lost int64
	d.deliveries = func(n int64) int {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case n%13 == 0:
			lost++
			return 0
		case n%5 == 0:
			dups += 2
			return 3
		}
		return 1
	}
	w := quick(Workload{MessageSize: 16, Rate: 1000, ConsumerGroups: 2})
	w.Drain = 200 * time.Millisecond
	var out bytes.Buffer
	res, err := Run(context.Background(), d, w, Options{Out: &out})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, lost, int64(10))
	require.Equal(t, 2*dups, res.Duplicates, "each group saw each redelivery")
	require.Equal(t, 2*lost, res.NeverReceived, "each group missed each lost message")
	require.Equal(t, 2*(res.Acked-lost), res.Received, "a message counts once")
	require.False(t, res.Drained)
	due := dueInWindow(res, 1000)
	require.Less(t, res.E2ELatencyUs.Count, 2*due, "redeliveries are not in the e2e latency twice")
	require.Greater(t, res.E2ELatencyUs.Count, 2*due*8/10)
	require.Contains(t, out.String(), "duplicates")
}

// TestHDRLogHoldsEverySample: the log's intervals add up to the summary's
// counts (its last interval, up to the end of the drain, is written), and
// its start time keeps its milliseconds.
func TestHDRLogHoldsEverySample(t *testing.T) {
	for i := range 3 {
		var log bytes.Buffer
		w := quick(Workload{MessageSize: 16, Rate: 2000})
		w.Duration = time.Duration(500+37*i) * time.Millisecond // the end falls anywhere in an interval
		res, err := Run(context.Background(), newMemDriver(), w, Options{Out: io.Discard, HDRLog: &log})
		require.NoError(t, err)
		require.Regexp(t, `#\[StartTime: \d+\.\d{3} \(seconds since epoch\)`, log.String())
		rd := hdr.NewHistogramLogReader(strings.NewReader(log.String()))
		counts := map[string]int64{}
		maxes := map[string]int64{}
		for {
			h, err := rd.NextIntervalHistogram()
			require.NoError(t, err)
			if h == nil {
				break
			}
			counts[h.Tag()] += h.TotalCount()
			maxes[h.Tag()] = max(maxes[h.Tag()], h.Max())
		}
		require.Equal(t, res.SendLatencyUs.Count, counts["send"])
		require.Equal(t, res.E2ELatencyUs.Count, counts["e2e"])
		require.Equal(t, res.SendLatencyUs.Max, maxes["send"])
		require.Equal(t, res.E2ELatencyUs.Max, maxes["e2e"])
	}
}

// slowAckDriver acknowledges each send 30 ms later, failing it if its
// context ended meanwhile.
type slowAckDriver struct{ *memDriver }

func (d slowAckDriver) NewProducer(ctx context.Context, topic string, o ProducerOptions) (Producer, error) {
	p, _ := d.memDriver.NewProducer(ctx, topic, o)
	return &slowAckProducer{inner: p}, nil
}

type slowAckProducer struct {
	inner Producer
	wg    sync.WaitGroup
}

func (p *slowAckProducer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		time.Sleep(30 * time.Millisecond)
		if err := ctx.Err(); err != nil {
			done(err)
			return
		}
		p.inner.Send(ctx, key, payload, done)
	}()
}

func (p *slowAckProducer) Close() error { p.wg.Wait(); return nil }

// TestWindowEndKeepsSendsInFlight: acknowledgements still in flight when
// the producers are done are waited for, not cancelled into errors.
func TestWindowEndKeepsSendsInFlight(t *testing.T) {
	res, err := Run(context.Background(), slowAckDriver{newMemDriver()}, quick(Workload{MessageSize: 16, Rate: 1000, SendMode: SendAsync}), Options{Out: io.Discard})
	require.NoError(t, err)
	require.Zero(t, res.Errors)
	require.Equal(t, res.Sent, res.Acked)
}

func TestExperimentSummaryCountsDeliveries(t *testing.T) {
	runs := []*Result{{Duplicates: 3, NeverReceived: 1}, {Duplicates: 5}, {}}
	med, _, hi := summarizeRuns(runs)
	require.Equal(t, 3.0, med.Duplicates)
	require.Equal(t, 1.0, hi.NeverReceived)
	r := &ExperimentResult{Cells: []CellResult{{Cell: Cell{Label: "c"}, Runs: runs, Median: med, Max: hi}}}
	require.Contains(t, r.Markdown(), "Deliveries, c: 3 duplicates (max 5), 0 acknowledged never received (max 1).")
}

// TestCancelEndsRun: cancelling in the warm-up or in the window ends the
// run with the context's error, stalled producers included.
func TestCancelEndsRun(t *testing.T) {
	for _, after := range []time.Duration{50 * time.Millisecond, 400 * time.Millisecond} {
		d := newMemDriver()
		d.stallCtx = func(ctx context.Context, n int64) error {
			if n == 20 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), after)
		w := quick(Workload{MessageSize: 16, Rate: 1000})
		w.Warmup, w.Duration, w.Drain = 200*time.Millisecond, time.Hour, time.Hour
		done := make(chan error, 1)
		go func() { _, err := Run(ctx, d, w, Options{Out: io.Discard}); done <- err }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.DeadlineExceeded)
		case <-time.After(30 * time.Second):
			t.Fatalf("Run still going 30 s after a cancel at %s", after)
		}
		cancel()
	}
}
