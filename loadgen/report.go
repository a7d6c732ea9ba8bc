package loadgen

import (
	"context"
	"fmt"
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

func (rep *reporter) line() {
	now := time.Now()
	secs := now.Sub(rep.last).Seconds()
	acked, recv, failed := rep.r.c.acked.Load(), rep.r.c.received.Load(), rep.r.c.failed.Load()
	dAcked, dRecv, dFailed := acked-rep.lastAcked, recv-rep.lastRecv, failed-rep.lastFailed
	prev := rep.last
	rep.lastAcked, rep.lastRecv, rep.lastFailed, rep.last = acked, recv, failed, now
	sendH, e2eH, lagH, svcH := rep.r.send.TakeInterval(), rep.r.e2e.TakeInterval(), rep.r.lag.TakeInterval(), rep.r.svc.TakeInterval()
	if rep.measuring.Load() && secs > 0 {
		size := float64(rep.r.w.MessageSize)
		rep.intervals = append(rep.intervals, Interval{Seconds: secs,
			PublishRate: float64(dAcked) / secs, PublishMBps: float64(dAcked) * size / secs / 1e6,
			ErrorRate: float64(dFailed) / secs, ConsumeRate: float64(dRecv) / secs, ConsumeMBps: float64(dRecv) * size / secs / 1e6,
			Backlog: max(rep.r.backlog(), 0), SendUs: Summarize(sendH), ServiceUs: Summarize(svcH), LagUs: Summarize(lagH), E2EUs: Summarize(e2eH)})
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

// final prints the run's summary lines.
func (rep *reporter) final(res *Result) {
	res.Intervals = rep.intervals
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
	if !rep.r.w.NoConsumers {
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
}
