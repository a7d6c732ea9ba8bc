package loadgen

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// reporter prints a progress line every ReportInterval, in the shape of
// Kafka's ProducerPerformance, and writes interval histograms to the HDR log.
type reporter struct {
	r         *run
	measuring atomic.Bool
	log       *hdr.HistogramLogWriter
	// logErr is the HDR log's first failed write; Run returns it.
	logErr     error
	lastAcked  int64
	lastRecv   int64
	lastFailed int64
	last       time.Time
	// intervals are the measured window's (line's; Result.Intervals).
	intervals []Interval
	// anchor, for a share (Part), is the window's start: intervals tick
	// on a grid of ReportInterval from there, as every share's do, and
	// idx is the number of the interval open now (negative in the
	// warm-up). Zero for a whole run: a ticker from the start.
	anchor time.Time
	idx    int
	// shareErr is the first failed encoding of a share's interval
	// histograms; Run returns it.
	shareErr error
}

func newReporter(r *run) *reporter {
	rep := &reporter{r: r, last: time.Now()}
	if r.opts.HDRLog != nil {
		rep.log = hdr.NewHistogramLogWriter(r.opts.HDRLog)
		rep.logged(rep.log.OutputLogFormatVersion())
		rep.logged(rep.log.OutputComment("samsa loadgen " + r.w.String()))
		// The library writes whole seconds; the interval times are
		// relative to the base in ms, so both lines carry the ms.
		base := rep.last.UnixMilli()
		iso := time.UnixMilli(base).UTC().Format("2006-01-02T15:04:05.000Z07:00")
		_, err := fmt.Fprintf(r.opts.HDRLog, "#[StartTime: %.3f (seconds since epoch), %s]\n", float64(base)/1e3, iso)
		rep.logged(err)
		_, err = fmt.Fprintf(r.opts.HDRLog, "#[BaseTime: %.3f (seconds since epoch)]\n", float64(base)/1e3)
		rep.logged(err)
		rep.log.SetBaseTime(base)
		rep.logged(rep.log.OutputLegend())
	}
	return rep
}

// logged keeps err if it is the HDR log's first failed write.
func (rep *reporter) logged(err error) {
	if err != nil && rep.logErr == nil {
		rep.logErr = fmt.Errorf("loadgen: HDR log: %w", err)
	}
}

// printf writes to Out. The progress and summary lines are best effort,
// as a command's prints to stdout are: the Result holds every figure, so
// a failed write is dropped.
func (rep *reporter) printf(format string, a ...any) {
	_, _ = fmt.Fprintf(rep.r.opts.Out, format, a...)
}

// loop runs until ctx ends; it owns the interval histograms.
func (rep *reporter) loop(ctx context.Context) {
	if !rep.anchor.IsZero() {
		rep.gridLoop(ctx)
		return
	}
	t := time.NewTicker(rep.r.w.ReportInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rep.line()
		}
	}
}

// gridLoop is a share's loop: a line at each point of the grid from
// anchor, the interval named by its number.
func (rep *reporter) gridLoop(ctx context.Context) {
	every := rep.r.w.ReportInterval
	slot := func(t time.Time) int { // the grid interval t falls in
		d := t.Sub(rep.anchor)
		k := int(d / every)
		if d < 0 && d%every != 0 {
			k--
		}
		return k
	}
	rep.idx = slot(rep.last)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		t.Reset(time.Until(rep.anchor.Add(time.Duration(rep.idx+1) * every)))
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			next := max(slot(now), rep.idx+1) // a timer is never early, but a stalled one may skip points
			rep.line()
			rep.idx = next
		}
	}
}

func (rep *reporter) line() {
	now := time.Now()
	secs := now.Sub(rep.last).Seconds()
	acked, recv, failed := rep.r.c.acked.Load(), rep.r.c.received.Load(), rep.r.c.failed.Load()
	dAcked, dRecv, dFailed := acked-rep.lastAcked, recv-rep.lastRecv, failed-rep.lastFailed
	prev := rep.last
	rep.lastAcked, rep.lastRecv, rep.lastFailed, rep.last = acked, recv, failed, now
	sendH, e2eH, lagH, svcH := rep.r.send.TakeInterval(), rep.r.e2e.TakeInterval(), rep.r.lag.TakeInterval(), rep.r.svc.TakeInterval()
	measured := rep.measuring.Load()
	if !rep.anchor.IsZero() {
		measured = rep.idx >= 0 // the grid says, as it says every share
	}
	if measured && secs > 0 {
		size := float64(rep.r.w.MessageSize)
		iv := Interval{Seconds: secs,
			PublishRate: float64(dAcked) / secs, PublishMBps: float64(dAcked) * size / secs / 1e6,
			ErrorRate: float64(dFailed) / secs, ConsumeRate: float64(dRecv) / secs, ConsumeMBps: float64(dRecv) * size / secs / 1e6,
			Backlog: rep.r.backlog(), SendUs: Summarize(sendH), ServiceUs: Summarize(svcH), LagUs: Summarize(lagH), E2EUs: Summarize(e2eH)}
		if rep.r.part == nil {
			iv.Backlog = max(iv.Backlog, 0)
		} else { // a share's own backlog can be negative: it receives other shares' messages
			iv.Share = rep.share(dAcked, dFailed, dRecv, sendH, svcH, lagH, e2eH)
		}
		rep.intervals = append(rep.intervals, iv)
	}
	phase := ""
	if !rep.measuring.Load() {
		phase = " [warm-up]"
	} else if rep.r.gate.held.Load() != nil {
		phase = fmt.Sprintf(" [backlog building: %d]", rep.r.backlog())
	}
	rate := float64(dAcked) / secs
	rep.printf("%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency; %d received, %.2f ms avg e2e, %.2f ms max e2e; %d errors%s\n",
		dAcked, rate, rate*float64(rep.r.w.MessageSize)/1e6,
		sendH.Mean()/1e3, float64(sendH.Max())/1e3, dRecv, e2eH.Mean()/1e3, float64(e2eH.Max())/1e3,
		rep.r.c.failed.Load(), phase)
	if rep.log != nil && rep.measuring.Load() {
		for _, th := range []struct {
			tag string
			h   *hdr.Histogram
		}{{"send", sendH}, {"e2e", e2eH}} {
			th.h.SetTag(th.tag)
			th.h.SetStartTimeMs(prev.UnixMilli())
			th.h.SetEndTimeMs(now.UnixMilli())
			rep.logged(rep.log.OutputIntervalHistogram(th.h))
		}
	}
}

// share is a share's interval as the merge needs it.
func (rep *reporter) share(acked, failed, received int64, send, svc, lag, e2e *hdr.Histogram) *IntervalShare {
	sh := &IntervalShare{Index: rep.idx, Acked: acked, Failed: failed, Received: received}
	for _, x := range []struct {
		dst *string
		h   *hdr.Histogram
	}{{&sh.Send, send}, {&sh.Service, svc}, {&sh.Lag, lag}, {&sh.E2E, e2e}} {
		var err error
		if *x.dst, err = encodeHist(x.h); err != nil && rep.shareErr == nil {
			rep.shareErr = err
		}
	}
	return sh
}

// final prints the run's summary lines.
func (rep *reporter) final(res *Result) {
	res.Intervals = rep.intervals
	PrintSummary(rep.r.opts.Out, res)
}

// PrintSummary prints res's summary lines to out, as Run does at its end:
// throughput and latencies, end-to-end latency, the backlog phase,
// schedule lag, replication, deliveries, errors and, for a distributed
// run, its workers. A failed write is dropped (the Result holds every
// figure).
func PrintSummary(out io.Writer, res *Result) {
	rep := &reporter{r: &run{w: &res.Workload, opts: Options{Out: out}}}
	s, e := res.SendLatencyUs, res.E2ELatencyUs
	rep.printf("%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.\n",
		res.Acked, res.MsgsPerSec, res.MBPerSec, s.Mean/1e3, float64(s.Max)/1e3,
		float64(s.P50)/1e3, float64(s.P95)/1e3, float64(s.P99)/1e3, float64(s.P999)/1e3)
	if !rep.r.w.NoConsumers {
		rep.printf("%d records received, %.1f records/sec, end-to-end %.2f ms avg, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th, %.2f ms max; drained: %v.\n",
			res.Received, res.ConsumedPerSec, e.Mean/1e3, float64(e.P50)/1e3, float64(e.P95)/1e3,
			float64(e.P99)/1e3, float64(e.P999)/1e3, float64(e.Max)/1e3, res.Drained)
	}
	if bp := res.Backlog; bp != nil {
		rep.printf("backlog: %d MiB asked; %d messages built in %.1fs", bp.Bytes>>20, bp.Messages, bp.BuildSeconds)
		if bp.DrainSeconds > 0 {
			rep.printf(", drained in %.1fs at %.1f msg/s (%.2f MB/s)", bp.DrainSeconds, bp.DrainMsgsPerSec, bp.DrainMBPerSec)
		}
		if bp.TimedOut != "" {
			rep.printf("; the %s ran out of its %s", bp.TimedOut, rep.r.w.BacklogTimeout)
		}
		rep.printf(".\n")
	}
	if l := res.SendLagUs; l != nil {
		rep.printf("schedule lag (intended to actual send, included above): %.2f ms 50th, %.2f ms 99th, %.2f ms 99.9th, %.2f ms max.\n",
			float64(l.P50)/1e3, float64(l.P99)/1e3, float64(l.P999)/1e3, float64(l.Max)/1e3)
	}
	if rp := res.Replication; rp != nil {
		rep.printf("replication: %s, %d slave(s), link %s, RTT %.3f ms; ", rp.Role, rp.Slaves, rp.Link, rp.LinkRTTUs/1e3)
		if l := rp.Lag; l != nil {
			rep.printf("lag %.2f ms 50th, %.2f ms 99th, %.2f ms 99.9th, %.2f ms max; behind %d B 99th (%d samples, %s).\n",
				float64(l.TimeUs.P50)/1e3, float64(l.TimeUs.P99)/1e3, float64(l.TimeUs.P999)/1e3, float64(l.TimeUs.Max)/1e3,
				l.BehindBytes.P99, l.Samples, l.Source)
		} else {
			rep.printf("lag not measured: %s.\n", rp.LagNote)
		}
	}
	if !rep.r.w.NoConsumers && res.Share {
		rep.printf("deliveries: %d duplicates seen here (counted once above); what was never received is counted where every worker's deliveries meet", res.Duplicates)
		if res.Foreign > 0 {
			rep.printf(", %d not this run's (ignored)", res.Foreign)
		}
		rep.printf(".\n")
	} else if !rep.r.w.NoConsumers {
		rep.printf("deliveries: %d duplicates (counted once above), %d acknowledged never received", res.Duplicates, res.NeverReceived)
		if res.Foreign > 0 {
			rep.printf(", %d not this run's (ignored)", res.Foreign)
		}
		rep.printf(".\n")
	}
	if res.Errors > 0 {
		rep.printf("%d sends failed", res.Errors)
		if res.Unsent > 0 {
			rep.printf(" (%d of them due in the window and never sent: the producers' %s grace after it ran out)", res.Unsent, rep.r.w.Drain)
		}
		rep.printf(".\n")
	}
	printWorkers(rep, res)
}
