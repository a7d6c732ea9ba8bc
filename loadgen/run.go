package loadgen

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options are the run's plumbing, apart from the workload.
type Options struct {
	// Out gets the progress lines and the final summary; default os.Stdout.
	Out io.Writer
	// HDRLog, if set, gets every report interval's histograms in the
	// HdrHistogram log format (tags "send" and "e2e").
	HDRLog io.Writer
}

// counters are the run's atomics, read by the reporter.
type counters struct {
	sent     atomic.Int64 // sends started
	acked    atomic.Int64 // sends acknowledged
	failed   atomic.Int64
	received atomic.Int64 // messages handed to consumers, every group
}

// Run runs workload w against driver d and returns the result. The driver
// is not closed. Cancelling ctx ends the run early with ctx's error.
func Run(ctx context.Context, d Driver, w Workload, opts Options) (*Result, error) {
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("loadgen: workload: %w", err)
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	payload, err := basePayload(&w)
	if err != nil {
		return nil, err
	}
	for i := 0; i < w.Topics; i++ {
		if err := d.CreateTopic(ctx, w.topicName(i), w.QueuesPerTopic); err != nil {
			return nil, fmt.Errorf("loadgen: create topic %s: %w", w.topicName(i), err)
		}
	}

	r := &run{w: &w, d: d, opts: opts, payload: payload,
		send: NewRecorder(), e2e: NewRecorder(), lag: NewRecorder()}
	r.pool.New = func() any { b := make([]byte, len(payload)); copy(b, payload); return &b }
	r.window.from.Store(math.MaxInt64)
	r.window.to.Store(math.MaxInt64)

	consumers, err := r.startConsumers(ctx)
	defer func() {
		for _, c := range consumers {
			_ = c.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	return r.produceAndMeasure(ctx)
}

type run struct {
	w       *Workload
	d       Driver
	opts    Options
	payload []byte
	pool    sync.Pool // *[]byte payload buffers, returned when a send is done
	send    *Recorder
	e2e     *Recorder
	// lag is the open-loop schedule lag: how late each send was issued
	// after its intended time (OpenMessaging Benchmark's "publish delay"):
	// the generator's timer and scheduling, or a Send that blocked on a
	// full in-flight window. It is part of send and e2e latency.
	lag *Recorder
	c   counters
	// window is the measured window, [from, to) in Unix ns: only messages
	// due inside it are figures, whenever they are acknowledged or
	// received (a warm-up message received in the window is not one; a
	// window message received during the drain is). from starts at
	// MaxInt64 (nothing is due in it), to at MaxInt64 (open-ended).
	window struct{ from, to atomic.Int64 }
}

// inWindow reports whether a message due at dueNs (Unix ns) is measured.
func (r *run) inWindow(dueNs int64) bool {
	return dueNs >= r.window.from.Load() && dueNs < r.window.to.Load()
}

func (r *run) startConsumers(ctx context.Context) ([]Consumer, error) {
	var out []Consumer
	if r.w.NoConsumers {
		return nil, nil
	}
	handler := func(p []byte) {
		r.c.received.Add(1)
		if len(p) >= 8 {
			// The payload's stamp is the intended send time in ns; the
			// consumer runs in this process, so the clocks are one.
			sentAt := int64(binary.BigEndian.Uint64(p))
			if r.inWindow(sentAt) {
				r.e2e.Record((time.Now().UnixNano() - sentAt) / 1e3)
			}
		}
	}
	copts := ConsumerOptions{Mode: r.w.ConsumeMode, PullInterval: r.w.PullInterval}
	for t := 0; t < r.w.Topics; t++ {
		for g := 0; g < r.w.ConsumerGroups; g++ {
			group := fmt.Sprintf("%s-g%d", r.w.TopicPrefix, g)
			for i := 0; i < r.w.Consumers; i++ {
				copts.Member, copts.Members = i, r.w.Consumers
				c, err := r.d.NewConsumer(ctx, r.w.topicName(t), group, copts, handler)
				if err != nil {
					return out, fmt.Errorf("loadgen: consumer %s/%s: %w", r.w.topicName(t), group, err)
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// produceAndMeasure runs warm-up, the measured window and the drain.
func (r *run) produceAndMeasure(ctx context.Context) (*Result, error) {
	w := r.w
	prodCtx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	popts := ProducerOptions{Mode: w.SendMode, BatchSize: w.BatchSize, BatchLinger: w.BatchLinger, MaxInFlight: w.MaxInFlight}
	var producers []Producer
	for t := 0; t < w.Topics; t++ {
		for i := 0; i < w.Producers; i++ {
			p, err := r.d.NewProducer(ctx, w.topicName(t), popts)
			if err != nil {
				for _, p := range producers {
					_ = p.Close()
				}
				return nil, fmt.Errorf("loadgen: producer %s: %w", w.topicName(t), err)
			}
			producers = append(producers, p)
		}
	}
	perProducerRate := w.Rate / float64(len(producers))
	start := time.Now()
	var wg sync.WaitGroup
	for i, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.produceLoop(prodCtx, ctx, p, i, perProducerRate, start)
		}()
	}
	rep := newReporter(r)
	repDone := make(chan struct{})
	go func() { defer close(repDone); rep.loop(prodCtx) }()

	res := &Result{Driver: r.d.Name(), DriverConfig: r.d.Describe(), Workload: *w, Config: w.String(), Start: start.UTC()}
	var lagProbe LagProbe
	if rd, ok := r.d.(ReplicatedDriver); ok {
		res.Replication, lagProbe = rd.Replication()
	}
	var lagSampler *LagSampler
	if res.Replication != nil && lagProbe != nil {
		lagSampler = StartLagSampler(ctx, lagProbe, DefaultLagInterval) // from the warm-up: see SetMeasuring
		defer lagSampler.Stop()
	}
	var measureStart time.Time
	var ackedAtStart, receivedAtStart int64
	select {
	case <-ctx.Done():
	case <-time.After(w.Warmup):
	}
	if ctx.Err() == nil {
		measureStart = time.Now()
		r.window.from.Store(measureStart.UnixNano())
		ackedAtStart, receivedAtStart = r.c.acked.Load(), r.c.received.Load()
		r.send.SetMeasuring(true)
		r.e2e.SetMeasuring(true)
		r.lag.SetMeasuring(true)
		rep.measuring.Store(true)
		if lagSampler != nil {
			lagSampler.SetMeasuring(true)
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.Duration):
		}
	}
	measured := time.Since(measureStart)
	if lagSampler != nil {
		res.Replication.Lag = lagSampler.Stop()
	}
	r.window.to.Store(measureStart.Add(measured).UnixNano())
	ackedInWindow := r.c.acked.Load() - ackedAtStart
	receivedInWindow := r.c.received.Load() - receivedAtStart
	stopProducing()
	wg.Wait()
	for _, p := range producers {
		_ = p.Close() // flushes: the window's last acknowledgements still count
	}
	r.send.SetMeasuring(false)
	r.lag.SetMeasuring(false)
	<-repDone
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Drained = r.drain(ctx)
	r.e2e.SetMeasuring(false)

	res.MeasuredSeconds = measured.Seconds()
	res.Sent = r.c.sent.Load()
	res.Acked = r.c.acked.Load()
	res.Errors = r.c.failed.Load()
	res.Received = r.c.received.Load()
	res.MsgsPerSec = float64(ackedInWindow) / measured.Seconds()
	res.MBPerSec = res.MsgsPerSec * float64(w.MessageSize) / 1e6
	res.ConsumedPerSec = float64(receivedInWindow) / measured.Seconds()
	res.SendLatencyUs = Summarize(r.send.Total())
	res.E2ELatencyUs = Summarize(r.e2e.Total())
	res.OpenLoop = w.Rate > 0
	if res.OpenLoop {
		lag := Summarize(r.lag.Total())
		res.SendLagUs = &lag
	}
	rep.final(res)
	return res, nil
}

// produceLoop sends until ctx ends. With rate > 0 it follows a fixed
// schedule and stamps each payload with its intended send time; with rate 0
// it sends as fast as acknowledgements allow and stamps the actual time.
// Sends get sendCtx, not ctx: the end of production must not cancel a send
// already under way and count it as failed.
func (r *run) produceLoop(ctx, sendCtx context.Context, p Producer, id int, rate float64, start time.Time) {
	var keys []string
	for k := 0; k < r.w.KeyCount; k++ {
		keys = append(keys, "k"+strconv.Itoa(k))
	}
	var gap time.Duration
	if rate > 0 {
		gap = time.Duration(float64(time.Second) / rate)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for n := int64(0); ctx.Err() == nil; n++ {
		var due time.Time
		if gap > 0 {
			due = start.Add(time.Duration(n) * gap)
			if wait := time.Until(due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
			}
		} else {
			due = time.Now()
		}
		if gap > 0 && r.inWindow(due.UnixNano()) {
			r.lag.Record(max(time.Since(due).Microseconds(), 0))
		}
		bufp := r.pool.Get().(*[]byte)
		binary.BigEndian.PutUint64(*bufp, uint64(due.UnixNano()))
		key := ""
		if len(keys) > 0 {
			key = keys[(n+int64(id))%int64(len(keys))]
		}
		r.c.sent.Add(1)
		p.Send(sendCtx, key, *bufp, func(err error) {
			if err != nil {
				r.c.failed.Add(1)
				r.send.RecordError()
			} else {
				r.c.acked.Add(1)
				if r.inWindow(due.UnixNano()) {
					r.send.Record(time.Since(due).Microseconds())
				}
			}
			r.pool.Put(bufp)
		})
	}
}

// drain waits for consumers to receive what was acknowledged, for at most
// Drain, returning whether they caught up.
func (r *run) drain(ctx context.Context) bool {
	if r.w.NoConsumers {
		return true
	}
	want := r.c.acked.Load() * int64(r.w.ConsumerGroups)
	deadline := time.Now().Add(r.w.Drain)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for r.c.received.Load() < want {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		<-tick.C
	}
	return true
}

// basePayload is the message body every send starts from.
func basePayload(w *Workload) ([]byte, error) {
	p := make([]byte, w.MessageSize)
	if w.PayloadFile != "" {
		src, err := os.ReadFile(w.PayloadFile)
		if err != nil {
			return nil, fmt.Errorf("loadgen: payload file: %w", err)
		}
		if len(src) == 0 {
			return nil, fmt.Errorf("loadgen: payload file %s is empty", w.PayloadFile)
		}
		for i := 0; i < len(p); i += copy(p[i:], src) {
		}
		return p, nil
	}
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	return p, nil
}
