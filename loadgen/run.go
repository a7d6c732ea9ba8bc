package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/samsamq/samsa/internal/lab"
)

// Options are the run's plumbing, apart from the workload.
type Options struct {
	// Out gets the progress lines and the final summary; default os.Stdout.
	Out io.Writer
	// HDRLog, if set, gets every report interval's histograms in the
	// HdrHistogram log format (tags "send" and "e2e").
	HDRLog io.Writer
	// Part, if set, makes the run one share of a workload spread over
	// several processes (part.go); nil runs the whole workload here.
	Part *Part
}

// counters are the run's atomics, read by the reporter.
type counters struct {
	sent     atomic.Int64 // sends started
	acked    atomic.Int64 // sends acknowledged
	failed   atomic.Int64
	unsent   atomic.Int64 // due in the window, never sent: the producers' grace ran out
	received atomic.Int64 // messages handed to consumers, every group, once each
}

// Run runs workload w against driver d and returns the result. The driver
// is not closed. Cancelling ctx ends the run early with ctx's error. A
// failed write to Options.HDRLog is returned with the (whole) result.
func Run(ctx context.Context, d Driver, w Workload, opts Options) (*Result, error) {
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("loadgen: workload: %w", err)
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	part := opts.Part
	if part != nil {
		if err := part.validate(&w); err != nil {
			return nil, fmt.Errorf("loadgen: share: %w", err)
		}
	}
	payloads, err := basePayloads(&w, part)
	if err != nil {
		return nil, err
	}
	if part == nil || part.CreateTopics {
		if err := createTopics(ctx, d, &w); err != nil {
			return nil, err
		}
	}

	r := &run{w: &w, d: d, opts: opts, payloads: payloads,
		send: NewRecorder(), e2e: NewRecorder(), lag: NewRecorder(), svc: NewRecorder(),
		closed: make(chan struct{}), dl: newDeliveries(w.Topics, w.Producers, w.ConsumerGroups)}
	r.pool.New = func() any { b := make([]byte, w.MessageSize); copy(b, payloads[0]); return &b }
	r.window.from.Store(math.MaxInt64)
	r.window.to.Store(math.MaxInt64)
	if part != nil {
		r.part, r.offNs = part, int64(part.ClockOffset)
		r.dl.tag = part.Tag
		part.live.Store(r)
	}

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
	w    *Workload
	d    Driver
	opts Options
	// payloads are the bodies sends start from: one, or a pool of
	// random ones (Workload.RandomPayloads) taken in turn.
	payloads [][]byte
	pool     sync.Pool // *[]byte payload buffers, returned when a send is done
	send     *Recorder
	e2e      *Recorder
	// lag is the open-loop schedule lag: how late each send was issued
	// after its intended time (OpenMessaging Benchmark's "publish delay"):
	// the generator's timer and scheduling, or a Send that blocked on a
	// full in-flight window. It is part of send and e2e latency.
	lag *Recorder
	// svc is the open-loop send latency from the actual send (the send
	// latency less lag: OpenMessaging Benchmark's "publish latency").
	svc *Recorder
	c   counters
	// window is the measured window, [from, to) in Unix ns: only messages
	// due inside it are figures, whenever they are acknowledged or
	// received (a warm-up message received in the window is not one; a
	// window message received during the drain is). from starts at
	// MaxInt64 (nothing is due in it), to at MaxInt64 (open-ended).
	window struct{ from, to atomic.Int64 }
	// closed is closed when the window's end is set: producers then send
	// what is still due before it and stop.
	closed chan struct{}
	dl     *deliveries
	// gate holds the consumers while a backlog builds (backlog_phase.go).
	gate gate
	// part is the share of the workload this run runs (nil: all of it);
	// offNs is its ClockOffset: stamps and the window are on the
	// coordinator's clock, this one's less offNs.
	part  *Part
	offNs int64
	// partStart is a share's start on the coordinator's clock: its
	// window and result times are reckoned from it, exactly as every
	// share's are.
	partStart time.Time
}

// inWindow reports whether a message due at dueNs (a stamp) is measured.
func (r *run) inWindow(dueNs int64) bool {
	return dueNs >= r.window.from.Load() && dueNs < r.window.to.Load()
}

// stamp is t as payloads and the window carry it: Unix ns on the
// coordinator's clock (this one's, for a whole run).
func (r *run) stamp(t time.Time) int64 { return t.UnixNano() - r.offNs }

// coordTime is t on the coordinator's clock, for the result.
func (r *run) coordTime(t time.Time) time.Time { return t.Add(-time.Duration(r.offNs)).UTC() }

// producerIDs are the global indices of the producers this run runs.
func (r *run) producerIDs() []int {
	if r.part != nil {
		return r.part.Producers
	}
	ids := make([]int, r.w.Topics*r.w.Producers)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

func (r *run) startConsumers(ctx context.Context) ([]Consumer, error) {
	var out []Consumer
	if r.w.NoConsumers {
		return nil, nil
	}
	// handler counts a message once per group: the payload's header
	// (delivery.go) names it; a redelivery is counted apart.
	handler := func(g int) Handler {
		return func(p []byte) {
			r.gate.wait() // closed while a backlog builds
			sentAt, first, ok := r.dl.received(g, p)
			if !first || !ok {
				return
			}
			r.c.received.Add(1)
			// The payload's stamp is the intended send time in ns; the
			// producer ran in this process, or in a share whose stamps
			// are on the coordinator's clock as this one's are.
			if r.inWindow(sentAt) {
				r.e2e.Record((r.stamp(time.Now()) - sentAt) / 1e3)
			}
		}
	}
	slots := allConsumers(r.w)
	if r.part != nil {
		slots = r.part.Consumers
	}
	handlers := map[int]Handler{} // by group: t × groups + g
	copts := ConsumerOptions{Mode: r.w.ConsumeMode, PullInterval: r.w.PullInterval, Members: r.w.Consumers}
	for _, s := range slots {
		g := s.Topic*r.w.ConsumerGroups + s.Group
		if handlers[g] == nil {
			handlers[g] = handler(g)
		}
		group := fmt.Sprintf("%s-g%d", r.w.TopicPrefix, s.Group)
		copts.Member = s.Member
		c, err := r.d.NewConsumer(ctx, r.w.topicName(s.Topic), group, copts, handlers[g])
		if err != nil {
			return out, fmt.Errorf("loadgen: consumer %s/%s: %w", r.w.topicName(s.Topic), group, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// produceAndMeasure runs warm-up, the measured window and the drain.
func (r *run) produceAndMeasure(ctx context.Context) (*Result, error) {
	w := r.w
	popts := ProducerOptions{Mode: w.SendMode, BatchSize: w.BatchSize, BatchLinger: w.BatchLinger, MaxInFlight: w.MaxInFlight}
	var producers []Producer
	closeProducers := func() {
		for _, p := range producers {
			_ = p.Close()
		}
	}
	ids := r.producerIDs()
	for _, id := range ids {
		t := id / w.Producers
		p, err := r.d.NewProducer(ctx, w.topicName(t), popts)
		if err != nil {
			closeProducers()
			return nil, fmt.Errorf("loadgen: producer %s: %w", w.topicName(t), err)
		}
		producers = append(producers, p)
	}
	perProducerRate := w.Rate / float64(w.Topics*w.Producers) // a share's producers keep the whole run's pace
	start := time.Now()
	if r.part != nil {
		var err error
		if start, err = r.startPart(ctx); err != nil {
			closeProducers()
			return nil, err
		}
	}
	// sendCtx ends when the producers' grace after the window runs out (or
	// ctx ends): a Send still blocked then fails and counts as an error.
	sendCtx, stopSends := context.WithCancel(ctx)
	defer stopSends()
	var wg sync.WaitGroup
	for i, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.produceLoop(sendCtx, p, ids[i], perProducerRate, start)
		}()
	}
	producing := make(chan struct{})
	go func() { wg.Wait(); close(producing) }()
	rep := newReporter(r)
	if r.part != nil {
		rep.anchor = start.Add(w.Warmup) // intervals on a grid from the window's start, as every share's
	}
	repCtx, stopReporter := context.WithCancel(ctx)
	defer stopReporter()
	repDone := make(chan struct{})
	go func() { defer close(repDone); rep.loop(repCtx) }()

	res := &Result{Driver: r.d.Name(), DriverConfig: r.d.Describe(), Workload: *w, Config: w.String(), Start: r.coordTime(start)}
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
	if r.part != nil {
		_ = lab.Sleep(ctx, time.Until(start.Add(w.Warmup))) // the window set in startPart
	} else {
		_ = lab.Sleep(ctx, w.Warmup)
	}
	if ctx.Err() == nil {
		if r.part != nil {
			measureStart = start.Add(w.Warmup) // its window was set at the start
		} else {
			measureStart = time.Now()
			r.window.from.Store(r.stamp(measureStart))
		}
		ackedAtStart, receivedAtStart = r.c.acked.Load(), r.c.received.Load()
		r.send.SetMeasuring(true)
		r.svc.SetMeasuring(true)
		r.e2e.SetMeasuring(true)
		r.lag.SetMeasuring(true)
		rep.measuring.Store(true)
		if lagSampler != nil {
			lagSampler.SetMeasuring(true)
		}
		if r.part != nil {
			_ = lab.Sleep(ctx, time.Until(measureStart.Add(w.Duration)))
		} else {
			res.Backlog = r.measure(ctx) // Duration, after a backlog phase if asked (backlog_phase.go)
		}
	}
	if measureStart.IsZero() { // cancelled in the warm-up: an empty window, closing now
		measureStart = time.Now()
	}
	measured := time.Since(measureStart)
	if r.part != nil && ctx.Err() == nil {
		measured = w.Duration // the window every share has
	}
	if lagSampler != nil {
		res.Replication.Lag = lagSampler.Stop()
	}
	measureEnd := measureStart.Add(measured)
	if r.part == nil || ctx.Err() != nil {
		r.window.to.Store(r.stamp(measureEnd))
	}
	res.Server = serverStats(r.d) // under load, before the producers stop
	close(r.closed)
	ackedInWindow := r.c.acked.Load() - ackedAtStart
	receivedInWindow := r.c.received.Load() - receivedAtStart
	// The producers send what was due in the window and stop; one that is
	// stalled (blocked on its in-flight limit, behind schedule) gets Drain
	// to catch up, then its blocked send and the rest due are errors.
	grace := time.NewTimer(w.Drain)
	select {
	case <-producing:
	case <-ctx.Done():
	case <-grace.C:
		res.ProducerGraceExpired = true
	}
	grace.Stop()
	if res.ProducerGraceExpired || ctx.Err() != nil {
		stopSends() // a send still blocked fails; sends in flight too
	}
	<-producing
	for _, p := range producers {
		_ = p.Close() // flushes: the window's last acknowledgements still count
	}
	stopSends()
	r.send.SetMeasuring(false)
	r.svc.SetMeasuring(false)
	r.lag.SetMeasuring(false)
	if err := ctx.Err(); err != nil {
		stopReporter()
		<-repDone
		return nil, err
	}
	if r.part != nil {
		res.Drained = r.part.Drained(ctx) // the coordinator's word: every share's deliveries
		if err := ctx.Err(); err != nil {
			stopReporter()
			<-repDone
			return nil, err
		}
	} else {
		res.Drained = r.drain(ctx)
	}
	r.e2e.SetMeasuring(false)
	stopReporter()
	<-repDone
	rep.line() // the last interval, however short: the HDR log misses nothing

	res.MeasuredFrom, res.MeasuredTo = r.coordTime(measureStart), r.coordTime(measureEnd)
	if r.part != nil {
		res.Start = r.partStart.UTC()
		res.MeasuredFrom = time.Unix(0, r.window.from.Load()).UTC()
		res.MeasuredTo = time.Unix(0, r.window.to.Load()).UTC()
	}
	res.MeasuredSeconds = measured.Seconds()
	res.Sent = r.c.sent.Load()
	res.Acked = r.c.acked.Load()
	res.Unsent = r.c.unsent.Load()
	res.Errors = r.c.failed.Load() + res.Unsent
	res.Received = r.c.received.Load()
	res.Duplicates = r.dl.duplicates.Load()
	res.Foreign = r.dl.foreign.Load()
	var err error
	if r.part != nil {
		res.Share = true
		// Another share's producers' messages, another share's consumers:
		// only the merge can count what never arrived.
		if res.Deliveries, err = r.dl.export(r.part.Producers); err != nil {
			return nil, err
		}
	} else if !w.NoConsumers {
		res.NeverReceived = r.dl.neverReceived()
	}
	res.MsgsPerSec = float64(ackedInWindow) / measured.Seconds()
	res.MBPerSec = res.MsgsPerSec * float64(w.MessageSize) / 1e6
	res.ConsumedPerSec = float64(receivedInWindow) / measured.Seconds()
	sendH, e2eH := r.send.Total(), r.e2e.Total()
	res.SendLatencyUs, res.E2ELatencyUs = Summarize(sendH), Summarize(e2eH)
	if res.SendHistogram, err = encodeHist(sendH); err != nil {
		return nil, err
	}
	if res.E2EHistogram, err = encodeHist(e2eH); err != nil {
		return nil, err
	}
	res.OpenLoop = w.Rate > 0
	if res.OpenLoop {
		lagH, svcH := r.lag.Total(), r.svc.Total()
		lag, svc := Summarize(lagH), Summarize(svcH)
		res.SendLagUs, res.ServiceLatencyUs = &lag, &svc
		if r.part != nil { // for the merge
			if res.LagHistogram, err = encodeHist(lagH); err != nil {
				return nil, err
			}
			if res.ServiceHistogram, err = encodeHist(svcH); err != nil {
				return nil, err
			}
		}
	}
	rep.final(res)
	if rep.shareErr != nil {
		return nil, rep.shareErr
	}
	if rep.logErr != nil {
		return res, rep.logErr
	}
	return res, nil
}

// produceLoop sends until the window closes: with rate > 0 it follows a
// fixed schedule, stamps each payload with its intended send time and
// sends every message due before the window's end, however late; with
// rate 0 it sends as fast as acknowledgements allow, stamps the actual
// time and stops at the window's end. When sendCtx ends first (the grace
// after the window ran out, or the run was cancelled), the messages due in
// the window and never sent are counted as errors (unsent), each with its
// schedule lag: the wait that kept them is seen.
func (r *run) produceLoop(sendCtx context.Context, p Producer, id int, rate float64, start time.Time) {
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
	closed := r.closed
	for n := int64(0); ; n++ {
		var due time.Time
		if gap > 0 {
			due = start.Add(time.Duration(n) * gap)
			for wait := time.Until(due); wait > 0; wait = time.Until(due) {
				if r.pastWindow(due) {
					return
				}
				timer.Reset(wait)
				select {
				case <-sendCtx.Done():
					r.giveUp(due, gap)
					return
				case <-closed:
					closed = nil // wake once: the check above now sees the end
					timer.Stop()
				case <-timer.C:
				}
			}
		} else {
			due = time.Now()
		}
		if r.pastWindow(due) {
			return
		}
		if sendCtx.Err() != nil {
			r.giveUp(due, gap)
			return
		}
		dueNs := r.stamp(due)
		if gap > 0 && r.inWindow(dueNs) {
			r.lag.Record(max(time.Since(due).Microseconds(), 0))
		}
		bufp := r.pool.Get().(*[]byte)
		if len(r.payloads) > 1 {
			copy(*bufp, r.payloads[(n+int64(id))%int64(len(r.payloads))])
		}
		putHeader(*bufp, dueNs, r.dl.tag, id, n)
		key := ""
		switch {
		case len(keys) > 0 && r.w.RandomKeys:
			key = keys[rand.IntN(len(keys))]
		case len(keys) > 0:
			key = keys[(n+int64(id))%int64(len(keys))]
		}
		r.c.sent.Add(1)
		issued := time.Now()
		p.Send(sendCtx, key, *bufp, func(err error) {
			if err != nil {
				r.c.failed.Add(1)
				r.send.RecordError()
			} else {
				r.c.acked.Add(1)
				r.dl.ack(id, n)
				if r.inWindow(dueNs) {
					r.send.Record(time.Since(due).Microseconds())
					if gap > 0 {
						r.svc.Record(time.Since(issued).Microseconds())
					}
				}
			}
			r.pool.Put(bufp)
		})
	}
}

// pastWindow reports whether a message due at due falls after the closed
// window: the producer is done.
func (r *run) pastWindow(due time.Time) bool {
	return r.stamp(due) >= r.window.to.Load()
}

// giveUp counts as unsent errors the messages from due on (every gap) that
// fall in the window, recording each one's schedule lag so far.
func (r *run) giveUp(due time.Time, gap time.Duration) {
	if gap <= 0 {
		return // closed loop: nothing was due
	}
	<-r.closed // the window's end is set
	for ; !r.pastWindow(due); due = due.Add(gap) {
		if !r.inWindow(r.stamp(due)) {
			continue // warm-up: not a figure, but still never sent
		}
		r.c.unsent.Add(1)
		r.send.RecordError()
		r.lag.Record(max(time.Since(due).Microseconds(), 0))
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

// createTopics makes the workload's topics, within SetupTimeout if set.
func createTopics(ctx context.Context, d Driver, w *Workload) error {
	setupCtx := ctx
	if w.SetupTimeout > 0 {
		var cancel context.CancelFunc
		setupCtx, cancel = context.WithTimeout(ctx, w.SetupTimeout)
		defer cancel()
	}
	for i := 0; i < w.Topics; i++ {
		if err := d.CreateTopic(setupCtx, w.topicName(i), w.QueuesPerTopic); err != nil {
			if ctx.Err() == nil && setupCtx.Err() != nil {
				return fmt.Errorf("loadgen: %s could not create %d topics × %d queues within the setup timeout %s (topic %d: %w)",
					d.Name(), w.Topics, w.QueuesPerTopic, w.SetupTimeout, i+1, err)
			}
			return fmt.Errorf("loadgen: create topic %s: %w", w.topicName(i), err)
		}
	}
	return nil
}

// basePayloads are the message bodies sends start from: the payload
// file's bytes or letters, or RandomPayloads bodies whose first
// RandomBytesRatio share is random (a fixed seed: every run sends the same
// bytes) and the rest zero.
func basePayloads(w *Workload, part *Part) ([][]byte, error) {
	if w.RandomPayloads > 0 {
		rng := rand.New(rand.NewChaCha8([32]byte{'s', 'a', 'm', 's', 'a'}))
		random := int(float64(w.MessageSize) * w.RandomBytesRatio)
		out := make([][]byte, w.RandomPayloads)
		for i := range out {
			p := make([]byte, w.MessageSize)
			for j := range random {
				p[j] = byte(rng.Uint32())
			}
			out[i] = p
		}
		return out, nil
	}
	p := make([]byte, w.MessageSize)
	if part != nil && part.Payload != nil { // the coordinator read the file
		for i := 0; i < len(p); i += copy(p[i:], part.Payload) {
		}
		return [][]byte{p}, nil
	}
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
		return [][]byte{p}, nil
	}
	for i := range p {
		p[i] = byte('a' + i%26)
	}
	return [][]byte{p}, nil
}

// encodeHist is h in HdrHistogram's compressed V2 form ("" when empty).
func encodeHist(h *hdr.Histogram) (string, error) {
	if h.TotalCount() == 0 {
		return "", nil
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("loadgen: encode histogram: %w", err)
	}
	return string(b), nil
}
