package backlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/bench"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen"
)

// Topic names: the backlog and the steady producers' topic.
const (
	BacklogTopic = "backlog"
	SteadyTopic  = "backlog-steady"
)

// Run is one repeat.
type Run struct {
	Store       string `json:"store"`
	BacklogMsgs int64  `json:"backlog_msgs"`
	// BacklogBytes are the CommitLog bytes the fill appended.
	BacklogBytes int64   `json:"backlog_bytes"`
	FillSeconds  float64 `json:"fill_seconds"`
	// Drop is what the page-cache drop did before the drain.
	Drop bench.PageCacheDrop `json:"drop"`
	// ResidentAfterDrain is how much of the store mincore found in the
	// page cache once drained: the drain's reads kept there.
	ResidentAfterDrain int64   `json:"resident_after_drain_bytes"`
	StoreBytes         int64   `json:"store_bytes"`
	DrainSeconds       float64 `json:"drain_seconds"`
	// DrainMBps is BacklogBytes ÷ DrainSeconds (10^6 B/s); BodyMBps the
	// message bodies alone.
	DrainMBps float64 `json:"drain_mb_per_sec"`
	BodyMBps  float64 `json:"body_mb_per_sec"`
	// Received counts backlog deliveries (a redelivery counts again).
	Received int64 `json:"received"`
	// ReadMBps is bench.RunDiskRead's on the same disk; ReadMethod its
	// method.
	ReadMBps   float64 `json:"read_mb_per_sec"`
	ReadMethod string  `json:"read_method"`
	DrainRatio float64 `json:"drain_ratio"`
	// LoopbackMBps is bench.RunLoopback's with one connection a consumer,
	// right after the raw read: what loopback TCP alone carries here, a
	// ceiling for any drain through TCP consumers; LoopbackRatio is
	// DrainMBps over it.
	LoopbackMBps  float64 `json:"loopback_mb_per_sec,omitempty"`
	LoopbackRatio float64 `json:"loopback_ratio,omitempty"`
	// SendBefore and SendDuring are the steady producers' send latency
	// (µs, from the intended send time) before and during the drain.
	SendBefore loadgen.Percentiles `json:"send_before_us"`
	SendDuring loadgen.Percentiles `json:"send_during_us"`
	SendErrors int64               `json:"send_errors"`
	P99Ratio   float64             `json:"p99_ratio"`
	// ReadCacheHits and ReadCacheMisses are the store's read block cache
	// counts over the drain (blocks found, blocks read), when the target
	// counts them.
	ReadCacheHits   int64 `json:"read_cache_hits,omitempty"`
	ReadCacheMisses int64 `json:"read_cache_misses,omitempty"`
	// ReadCacheDirect: the block reads made with O_DIRECT
	// (Settings.DirectColdReads).
	ReadCacheDirect int64 `json:"read_cache_direct,omitempty"`
	// CPUSeconds is the process's CPU time (user + system, /proc/self/stat)
	// over the drain: broker, consumers and steady producers, which share
	// the process; CPUPerGiB is it per GiB of backlog drained.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	CPUPerGiB  float64 `json:"cpu_seconds_per_gib,omitempty"`
	// BrokerCPUSeconds is the broker's part of it: the CPU profile's
	// samples over the drain on goroutines the target started (the
	// embedded broker and name server), labelled (sideLabel), scaled to
	// CPUSeconds; BrokerCPUPerGiB per GiB drained. ClientCPUSeconds is the
	// steady producers' and consumers' part; the rest (the runtime's
	// unlabelled goroutines: garbage collection) is in neither. Zero when
	// no profile could be taken (another CPU profile running).
	BrokerCPUSeconds float64 `json:"broker_cpu_seconds,omitempty"`
	BrokerCPUPerGiB  float64 `json:"broker_cpu_seconds_per_gib,omitempty"`
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
}

// Result is what a backlog-drain run writes under results/.
type Result struct {
	resultfile.Header
	Settings    Settings `json:"settings"`
	Runs        []Run    `json:"runs"`
	DrainTarget float64  `json:"drain_target"`
	P99Target   float64  `json:"p99_target"`
	// Median is the median run by drain ratio (its p99 ratio is that
	// run's); MedianP99Ratio the median of the p99 ratios.
	Median Run `json:"median"`
	// Warm is the WarmReference repeat (nil without one).
	Warm           *Run    `json:"warm,omitempty"`
	MedianP99Ratio float64 `json:"median_p99_ratio"`
	DrainMet       bool    `json:"drain_met"`
	// DrainNA: the consumers were paced (Settings.PaceMBps), so the
	// drain target does not apply.
	DrainNA bool `json:"drain_not_applicable,omitempty"`
	P99Met  bool `json:"p99_met"`
	// Cells are a matrix's cells (cells.go), each its own result; the
	// fields above are then the first cell's.
	Cells       []CellResult `json:"cells,omitempty"`
	CellTargets CellTargets  `json:"cell_targets,omitzero"`
	CellChecks  []CellCheck  `json:"cell_checks,omitempty"`
}

// RunExperiment runs the repeats (each cell's, for a matrix).
func RunExperiment(ctx context.Context, e *Experiment, opts Options) (*Result, error) {
	s, err := e.Settings(opts.Quick)
	if err != nil {
		return nil, err
	}
	opts.Progress, opts.Poll = cmp.Or(opts.Progress, io.Discard), cmp.Or(opts.Poll, 5*time.Millisecond)
	if len(e.Cells) > 0 {
		return runCells(ctx, e, s, opts)
	}
	return runSettings(ctx, e, e.Name, s, opts)
}

// runSettings runs s's repeats (and its warm reference).
func runSettings(ctx context.Context, e *Experiment, name string, s Settings, opts Options) (*Result, error) {
	var err error
	res := &Result{Header: e.Header(opts.Quick), Settings: s, DrainTarget: e.DrainTarget, P99Target: e.P99Target}
	if res.Runs, err = lab.Repeat(lab.Repeats[Run]{N: s.Repeats, What: "backlog", Progress: opts.Progress,
		Title: func(i int) string {
			return fmt.Sprintf("%s: repeat %d/%d: fill %d MiB, drop it from the page cache, drain it beside %g msg/s",
				name, i, s.Repeats, s.BacklogBytes>>20, s.SteadyRate)
		},
		Done: func(r Run) string {
			return fmt.Sprintf("drained %d MiB in %.2fs: %.1f MB/s; raw read %.1f MB/s (%s): ratio %.2f; loopback TCP %.1f MB/s: ratio %.2f; send p99 %.2f ms before, %.2f ms during: ratio %.2f; CPU %.2f s/GiB (broker %.2f)",
				r.BacklogBytes>>20, r.DrainSeconds, r.DrainMBps, r.ReadMBps, r.ReadMethod, r.DrainRatio, r.LoopbackMBps, r.LoopbackRatio,
				float64(r.SendBefore.P99)/1000, float64(r.SendDuring.P99)/1000, r.P99Ratio, r.CPUPerGiB, r.BrokerCPUPerGiB)
		}}, func(int) (Run, error) { return runOnce(ctx, s, opts) }); err != nil {
		return nil, err
	}
	if s.WarmReference && !s.Warm {
		ws := s
		ws.Warm = true
		lab.Progressf(opts.Progress, "== %s: the warm reference: the same backlog drained from the page cache\n", name)
		r, err := runOnce(ctx, ws, opts)
		if err != nil {
			return nil, fmt.Errorf("backlog: warm reference: %w", err)
		}
		lab.Progressf(opts.Progress, "   drained %d MiB warm in %.2fs: %.1f MB/s; loopback TCP %.1f MB/s; send p99 %.2f ms before, %.2f ms during; CPU %.2f s/GiB\n",
			r.BacklogBytes>>20, r.DrainSeconds, r.DrainMBps, r.LoopbackMBps, float64(r.SendBefore.P99)/1000, float64(r.SendDuring.P99)/1000, r.CPUPerGiB)
		res.Warm = &r
	}
	res.Median = lab.Median(res.Runs, func(r Run) float64 { return r.DrainRatio })
	res.MedianP99Ratio = lab.Median(res.Runs, func(r Run) float64 { return r.P99Ratio }).P99Ratio
	res.DrainMet = res.Median.DrainRatio >= res.DrainTarget
	res.DrainNA = s.PaceMBps > 0
	res.P99Met = res.MedianP99Ratio > 0 && res.MedianP99Ratio <= res.P99Target
	return res, nil
}

func runOnce(ctx context.Context, s Settings, opts Options) (r Run, err error) {
	// The target's goroutines (and all they start) carry the broker's
	// label, this one and what it starts from here on the client's.
	var t Target
	pprof.Do(ctx, pprof.Labels(sideLabel, "broker"), func(ctx context.Context) {
		t, err = opts.NewTarget(ctx, TargetOptions{Flush: s.Flush, DirectColdReads: s.DirectColdReads, TransferMsgByHeap: s.TransferMsgByHeap})
	})
	if err != nil {
		return r, err
	}
	defer pprof.SetGoroutineLabels(ctx)
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(sideLabel, "client")))
	closed := false
	defer func() {
		if !closed { // an early return: its error, with the Close's
			err = errors.Join(err, t.Close())
		}
	}()
	r.Store = t.Describe()
	d := t.Driver()
	if err := d.CreateTopic(ctx, BacklogTopic, s.Queues); err != nil {
		return r, fmt.Errorf("create %s: %w", BacklogTopic, err)
	}
	if err := d.CreateTopic(ctx, SteadyTopic, s.Queues); err != nil {
		return r, fmt.Errorf("create %s: %w", SteadyTopic, err)
	}
	t0 := time.Now()
	if r.BacklogMsgs, r.BacklogBytes, err = t.Fill(ctx, BacklogTopic, s.Queues, s.BacklogBytes, s.MessageSize); err != nil {
		return r, fmt.Errorf("fill: %w", err)
	}
	r.FillSeconds = time.Since(t0).Seconds()
	lab.Progressf(opts.Progress, "   filled %d messages, %d MiB in %.1fs\n", r.BacklogMsgs, r.BacklogBytes>>20, r.FillSeconds)
	if s.Warm {
		if r.Drop, err = bench.ResidentDir(t.StoreDir()); err != nil {
			return r, err
		}
		r.Drop.Method, r.Drop.ResidentAfter = "none (warm)", r.Drop.ResidentBefore
	} else if r.Drop, err = bench.DropDirCache(t.StoreDir()); err != nil {
		return r, fmt.Errorf("drop the store from the page cache: %w", err)
	}
	lab.Progressf(opts.Progress, "   page cache (%s), %d files: %d MiB resident before, %d MiB after\n",
		r.Drop.Method, r.Drop.Files, r.Drop.ResidentBefore>>20, r.Drop.ResidentAfter>>20)

	st, err := startSteady(ctx, d, s)
	if err != nil {
		return r, err
	}
	defer st.stop()
	// one second's warm-up (connections, routes), then the before window
	if lab.Sleep(ctx, time.Second) != nil {
		return r, ctx.Err()
	}
	st.before.SetMeasuring(true)
	if lab.Sleep(ctx, time.Duration(s.Before)) != nil {
		return r, ctx.Err()
	}
	st.before.SetMeasuring(false)

	rc, counts := t.(ReadCacheCounter)
	var hits0, misses0, direct0 int64
	if counts {
		hits0, misses0, direct0 = rc.ReadCache()
	}
	var received, bodyBytes atomic.Int64
	handler := func(p []byte) {
		received.Add(1)
		n := bodyBytes.Add(int64(len(p)))
		if s.PaceMBps > 0 { // a consumer waits until its bytes are due
			due := time.Duration(float64(n) / (s.PaceMBps * 1e6) * float64(time.Second))
			if w := due - time.Since(t0); w > 0 {
				time.Sleep(min(w, time.Second))
			}
		}
	}
	st.during.SetMeasuring(true)
	cpu0 := processCPU()
	split := startCPUSplit()
	t0 = time.Now()
	var consumers []loadgen.Consumer
	defer func() {
		for _, c := range consumers {
			_ = c.Close()
		}
	}()
	for i := 0; i < s.Consumers; i++ {
		c, err := d.NewConsumer(ctx, BacklogTopic, "backlog-drain", loadgen.ConsumerOptions{Mode: loadgen.ConsumePull,
			PullInterval: 10 * time.Millisecond, Member: i, Members: s.Consumers}, handler)
		if err != nil {
			return r, fmt.Errorf("consumer: %w", err)
		}
		consumers = append(consumers, c)
	}
	deadline := t0.Add(time.Duration(s.DrainTimeout))
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	nextReport := t0.Add(5 * time.Second)
	for received.Load() < r.BacklogMsgs {
		if now := time.Now(); now.After(nextReport) {
			lab.Progressf(opts.Progress, "   draining: %d of %d messages after %.0fs\n", received.Load(), r.BacklogMsgs, now.Sub(t0).Seconds())
			nextReport = now.Add(5 * time.Second)
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("drained %d of %d messages in %v", received.Load(), r.BacklogMsgs, time.Duration(s.DrainTimeout))
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-tick.C:
		}
	}
	el := time.Since(t0)
	r.CPUSeconds = processCPU() - cpu0
	gib := float64(r.BacklogBytes) / (1 << 30)
	r.CPUPerGiB = r.CPUSeconds / gib
	if sides := split.stop(); len(sides) > 0 {
		var sampled float64
		for _, v := range sides {
			sampled += v
		}
		if sampled > 0 { // the profile's share of each side, of the process's CPU time
			r.BrokerCPUSeconds = r.CPUSeconds * sides["broker"] / sampled
			r.ClientCPUSeconds = r.CPUSeconds * sides["client"] / sampled
			r.BrokerCPUPerGiB = r.BrokerCPUSeconds / gib
		}
	}
	st.during.SetMeasuring(false)
	if counts {
		h, m, d := rc.ReadCache()
		r.ReadCacheHits, r.ReadCacheMisses, r.ReadCacheDirect = h-hits0, m-misses0, d-direct0
	}
	r.DrainSeconds = el.Seconds()
	r.Received = received.Load()
	r.DrainMBps = float64(r.BacklogBytes) / 1e6 / el.Seconds()
	r.BodyMBps = float64(bodyBytes.Load()) / 1e6 / el.Seconds()
	st.stop()
	r.SendBefore, r.SendDuring = loadgen.Summarize(st.before.Total()), loadgen.Summarize(st.during.Total())
	r.SendErrors = st.errors.Load()
	if r.SendBefore.P99 > 0 {
		r.P99Ratio = float64(r.SendDuring.P99) / float64(r.SendBefore.P99)
	}
	if r.ResidentAfterDrain, r.StoreBytes, err = residentDir(t.StoreDir()); err != nil {
		return r, err
	}
	for _, c := range consumers {
		_ = c.Close()
	}
	consumers = nil
	closed = true
	if err := t.Close(); err != nil {
		return r, err
	}
	rd, err := bench.RunDiskRead(ctx, bench.DiskReadOptions{Dir: opts.DiskDir, Size: s.ReadSize})
	if err != nil {
		return r, fmt.Errorf("raw read: %w", err)
	}
	r.ReadMBps, r.ReadMethod = rd.MBPerSec, rd.Method
	if r.ReadMBps > 0 {
		r.DrainRatio = r.DrainMBps / r.ReadMBps
	}
	lb, err := bench.RunLoopback(ctx, bench.LoopbackOptions{Conns: s.Consumers, Bytes: min(s.BacklogBytes, 1<<30)})
	if err != nil {
		return r, fmt.Errorf("loopback ceiling: %w", err)
	}
	r.LoopbackMBps = lb.MBPerSec
	if r.LoopbackMBps > 0 {
		r.LoopbackRatio = r.DrainMBps / r.LoopbackMBps
	}
	return r, nil
}

// steady is the steady producers: open loop at SteadyRate, latency from
// the intended send time into before or during, whichever is measuring.
type steady struct {
	before, during *loadgen.Recorder
	errors         atomic.Int64
	cancel         context.CancelFunc
	wg             sync.WaitGroup
	producers      []loadgen.Producer
	once           sync.Once
}

func startSteady(ctx context.Context, d loadgen.Driver, s Settings) (*steady, error) {
	st := &steady{before: loadgen.NewRecorder(), during: loadgen.NewRecorder()}
	for i := 0; i < s.SteadyProducers; i++ {
		p, err := d.NewProducer(ctx, SteadyTopic, loadgen.ProducerOptions{Mode: loadgen.SendAsync, MaxInFlight: 256})
		if err != nil {
			for _, p := range st.producers {
				_ = p.Close()
			}
			return nil, fmt.Errorf("steady producer: %w", err)
		}
		st.producers = append(st.producers, p)
	}
	pctx, cancel := context.WithCancel(ctx)
	st.cancel = cancel
	gap := time.Duration(float64(time.Second) * float64(s.SteadyProducers) / s.SteadyRate)
	start := time.Now()
	for _, p := range st.producers {
		st.wg.Add(1)
		go func() { // paced by its own schedule; stopped by cancel
			defer st.wg.Done()
			payload := make([]byte, s.MessageSize)
			for i := range payload {
				payload[i] = byte('a' + i%26)
			}
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for n := int64(0); ; n++ {
				due := start.Add(time.Duration(n) * gap)
				if w := time.Until(due); w > 0 {
					timer.Reset(w)
					select {
					case <-pctx.Done():
						return
					case <-timer.C:
					}
				}
				if pctx.Err() != nil {
					return
				}
				p.Send(pctx, "", payload, func(err error) {
					if err != nil {
						if pctx.Err() == nil {
							st.errors.Add(1)
						}
						return
					}
					us := time.Since(due).Microseconds()
					st.before.Record(us) // each records only while measuring
					st.during.Record(us)
				})
			}
		}()
	}
	return st, nil
}

// stop ends the steady producers (once) and closes them.
func (st *steady) stop() {
	st.once.Do(func() {
		st.cancel()
		st.wg.Wait()
		for _, p := range st.producers {
			_ = p.Close()
		}
	})
}

// residentDir sums bench.Resident over the regular files under dir.
func residentDir(dir string) (resident, size int64, err error) {
	d, err := bench.ResidentDir(dir)
	return d.ResidentBefore, d.Bytes, err
}
