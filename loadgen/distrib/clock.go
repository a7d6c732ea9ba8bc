package distrib

import (
	"context"
	"net/http"
	"time"
)

// clockSample is a worker's clock offset (its clock minus the
// coordinator's) and the round trip of the request that measured it.
type clockSample struct {
	offset, rtt time.Duration
}

// applied is the correction the worker's times get: the offset when it
// exceeds its uncertainty (half the round trip), else none. Two clocks
// on one host, or kept by NTP within less than the network's round trip,
// are better left as they are than corrected by a measurement's error.
func (s clockSample) applied() time.Duration {
	if s.offset.Abs() > s.rtt/2 {
		return s.offset
	}
	return 0
}

// measureClock measures r's offset NTP-style: ClockSamples requests,
// each giving offset = worker time − the request's midpoint on this
// clock; the one with the smallest round trip is kept (the least room
// for asymmetric delays: the offset is known to ± half of it). The first
// request, which may open the connection, is one of the samples and
// rarely the best.
func (c *coord) measureClock(ctx context.Context, r *remote) (clockSample, error) {
	best := clockSample{rtt: -1}
	for range c.o.ClockSamples {
		var resp clockResponse
		t0 := time.Now()
		if err := c.call(ctx, r, http.MethodGet, pathClock, nil, &resp, c.o.RequestTimeout, maxSmallResponse); err != nil {
			return clockSample{}, err
		}
		rtt := time.Since(t0) // monotonic
		mid := t0.UnixNano() + int64(rtt/2)
		if best.rtt < 0 || rtt < best.rtt {
			best = clockSample{offset: time.Duration(resp.NowNs - mid), rtt: rtt}
		}
	}
	r.lastOK = time.Now()
	return best, nil
}

// progress prints the workers' summed counts every ReportInterval while
// they run, in the manner of a whole run's progress lines.
type progress struct {
	c                    *coord
	warmupEnd            time.Time
	last                 time.Time
	lastAcked, lastRecvd int64
}

// maybe prints a line when ReportInterval has passed since the last.
func (p *progress) maybe() {
	now := time.Now()
	secs := now.Sub(p.last).Seconds()
	if now.Sub(p.last) < p.c.w.ReportInterval {
		return
	}
	var acked, recvd, failed int64
	for _, r := range p.c.workers {
		acked, recvd, failed = acked+r.st.Counts.Acked, recvd+r.st.Counts.Received, failed+r.st.Counts.Failed
	}
	phase := ""
	if now.Before(p.warmupEnd) {
		phase = " [warm-up]"
	}
	rate := float64(acked-p.lastAcked) / secs
	p.c.printf("%d workers: %d records sent, %.1f records/sec (%.2f MB/sec); %d received, %.1f records/sec; %d errors%s\n",
		len(p.c.workers), acked-p.lastAcked, rate, rate*float64(p.c.w.MessageSize)/1e6,
		recvd-p.lastRecvd, float64(recvd-p.lastRecvd)/secs, failed, phase)
	p.last, p.lastAcked, p.lastRecvd = now, acked, recvd
}
