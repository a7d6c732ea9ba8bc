package loadgen

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Merge joins the results of a distributed run's shares (each run with
// Options.Part on the same workload, run tag and window) into one Result
// for workload w (the coordinator's): counts and rates are summed; the
// whole window's histograms and each report interval's are merged exactly
// (HDR Merge of the decoded histograms, never averaged percentiles); the
// delivery sets are joined, so Received counts a message once per group
// whichever share received it, a message two shares received is a
// duplicate, and NeverReceived compares every share's acknowledgements
// with every share's deliveries. The merged result carries no delivery
// sets nor interval shares; Workers is left to the caller.
func Merge(w Workload, shares []*Result) (*Result, error) {
	if len(shares) == 0 {
		return nil, errors.New("loadgen: merge: no results")
	}
	w.EnsureDefaults()
	first := shares[0]
	out := &Result{Driver: first.Driver, DriverConfig: first.DriverConfig, Workload: w, Config: w.String(),
		Start: first.Start, OpenLoop: w.Rate > 0, MeasuredSeconds: first.MeasuredSeconds,
		MeasuredFrom: first.MeasuredFrom, MeasuredTo: first.MeasuredTo, Drained: true}
	var sharesReceived int64
	for i, s := range shares {
		if !s.Share {
			return nil, fmt.Errorf("loadgen: merge: result %d is not a share's", i)
		}
		if !s.MeasuredFrom.Equal(first.MeasuredFrom) || !s.MeasuredTo.Equal(first.MeasuredTo) {
			return nil, fmt.Errorf("loadgen: merge: result %d's window [%s, %s) is not result 0's [%s, %s)", i,
				s.MeasuredFrom, s.MeasuredTo, first.MeasuredFrom, first.MeasuredTo)
		}
		out.Sent += s.Sent
		out.Acked += s.Acked
		out.Errors += s.Errors
		out.Unsent += s.Unsent
		out.ProducerGraceExpired = out.ProducerGraceExpired || s.ProducerGraceExpired
		out.Duplicates += s.Duplicates
		out.Foreign += s.Foreign
		out.Drained = out.Drained && s.Drained
		out.MsgsPerSec += s.MsgsPerSec
		out.MBPerSec += s.MBPerSec
		out.ConsumedPerSec += s.ConsumedPerSec
		sharesReceived += s.Received
		if out.Replication == nil {
			out.Replication = s.Replication
		}
		if out.Server == nil {
			out.Server = s.Server
		}
	}
	if err := mergeHists(out, shares); err != nil {
		return nil, err
	}
	out.Received = sharesReceived
	if !w.NoConsumers {
		received, never, err := mergeDeliveries(&w, shares, out.Sent)
		if err != nil {
			return nil, err
		}
		// A message two shares received counted as first at each.
		out.Received, out.NeverReceived = received, never
		out.Duplicates += sharesReceived - received
	}
	var err error
	if out.Intervals, err = mergeIntervals(shares); err != nil {
		return nil, err
	}
	return out, nil
}

// mergeHists merges the shares' whole-window histograms into out.
func mergeHists(out *Result, shares []*Result) error {
	kinds := []struct {
		get func(*Result) string
		set func(h *hdr.Histogram, enc string)
	}{
		{func(r *Result) string { return r.SendHistogram }, func(h *hdr.Histogram, enc string) {
			out.SendHistogram, out.SendLatencyUs = enc, Summarize(h)
		}},
		{func(r *Result) string { return r.E2EHistogram }, func(h *hdr.Histogram, enc string) {
			out.E2EHistogram, out.E2ELatencyUs = enc, Summarize(h)
		}},
		{func(r *Result) string { return r.ServiceHistogram }, func(h *hdr.Histogram, enc string) {
			if out.OpenLoop {
				p := Summarize(h)
				out.ServiceHistogram, out.ServiceLatencyUs = enc, &p
			}
		}},
		{func(r *Result) string { return r.LagHistogram }, func(h *hdr.Histogram, enc string) {
			if out.OpenLoop {
				p := Summarize(h)
				out.LagHistogram, out.SendLagUs = enc, &p
			}
		}},
	}
	for _, k := range kinds {
		var encs []string
		for _, s := range shares {
			encs = append(encs, k.get(s))
		}
		h, err := mergeEncoded(encs)
		if err != nil {
			return err
		}
		enc, err := encodeHist(h)
		if err != nil {
			return err
		}
		k.set(h, enc)
	}
	return nil
}

// mergeEncoded is the histograms encs encode ("" is empty) merged.
func mergeEncoded(encs []string) (*hdr.Histogram, error) {
	out := newHist()
	for _, e := range encs {
		if e == "" {
			continue
		}
		h, err := hdr.Decode([]byte(e))
		if err != nil {
			return nil, fmt.Errorf("loadgen: merge: histogram: %w", err)
		}
		if dropped := out.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("loadgen: merge: %d samples out of the histogram's range", dropped)
		}
	}
	return out, nil
}

// mergeDeliveries joins the shares' delivery sets: each group's
// messages received (each once), and acknowledged messages a group never
// received. sent, every share's sends, bounds a set's size.
func mergeDeliveries(w *Workload, shares []*Result, sent int64) (received, never int64, err error) {
	np, ng := w.Topics*w.Producers, w.Topics*w.ConsumerGroups
	acked := make([]bitset, np)
	groups := make([][]bitset, ng)
	for g := range groups {
		groups[g] = make([]bitset, w.Producers)
	}
	limit := (sent + 63) / 64 * 8 // a producer's numbers run below its sends
	for i, s := range shares {
		for _, set := range s.Deliveries {
			p, g := set.Producer, set.Group
			var dst *bitset
			switch {
			case p < 0 || p >= np || g < -1 || g >= ng:
			case g == -1:
				dst = &acked[p]
			case p/w.Producers == g/w.ConsumerGroups: // the group's topic's producer
				dst = &groups[g][p%w.Producers]
			}
			if dst == nil {
				return 0, 0, fmt.Errorf("loadgen: merge: result %d: delivery set of group %d, producer %d: not in the workload", i, g, p)
			}
			if err := dst.or(set.Bits, limit); err != nil {
				return 0, 0, fmt.Errorf("loadgen: merge: result %d: %w", i, err)
			}
		}
	}
	for g := range groups {
		t := g / w.ConsumerGroups
		for i := range groups[g] {
			received += groups[g][i].count()
			never += acked[t*w.Producers+i].missing(&groups[g][i])
		}
	}
	return received, never, nil
}

// mergeIntervals lines the shares' intervals up by their number on the
// grid and merges each: rates and backlog summed, histograms merged,
// seconds the shares' mean (their timers differ by scheduling only).
func mergeIntervals(shares []*Result) ([]Interval, error) {
	byIndex := map[int][]*Interval{}
	for i, s := range shares {
		for j := range s.Intervals {
			iv := &s.Intervals[j]
			if iv.Share == nil {
				return nil, fmt.Errorf("loadgen: merge: result %d's interval %d is not a share's", i, j)
			}
			byIndex[iv.Share.Index] = append(byIndex[iv.Share.Index], iv)
		}
	}
	var out []Interval
	for _, k := range slices.Sorted(maps.Keys(byIndex)) {
		ivs := byIndex[k]
		var m Interval
		var send, svc, lag, e2e []string
		for _, iv := range ivs {
			m.Seconds += iv.Seconds / float64(len(ivs))
			m.PublishRate += iv.PublishRate
			m.PublishMBps += iv.PublishMBps
			m.ErrorRate += iv.ErrorRate
			m.ConsumeRate += iv.ConsumeRate
			m.ConsumeMBps += iv.ConsumeMBps
			m.Backlog += iv.Backlog
			send, svc = append(send, iv.Share.Send), append(svc, iv.Share.Service)
			lag, e2e = append(lag, iv.Share.Lag), append(e2e, iv.Share.E2E)
		}
		m.Backlog = max(m.Backlog, 0)
		for _, x := range []struct {
			dst  *Percentiles
			encs []string
		}{{&m.SendUs, send}, {&m.ServiceUs, svc}, {&m.LagUs, lag}, {&m.E2EUs, e2e}} {
			h, err := mergeEncoded(x.encs)
			if err != nil {
				return nil, err
			}
			*x.dst = Summarize(h)
		}
		out = append(out, m)
	}
	return out, nil
}

// printWorkers prints a distributed run's workers, one line each, and
// what their clocks mean for the e2e latency.
func printWorkers(rep *reporter, res *Result) {
	if len(res.Workers) == 0 {
		return
	}
	rep.printf("%d workers (clock: offset to the coordinator's ± half the measuring round trip; drift over the run):\n", len(res.Workers))
	for _, ws := range res.Workers {
		host := ""
		if ws.Host != "" {
			host = " (" + ws.Host + ")"
		}
		rep.printf("  %s%s: %d producers, %d consumers; %d acked (%.1f msg/s), %d received, %d errors; send %.2f ms 99th",
			ws.Worker, host, ws.Producers, ws.Consumers, ws.Acked, ws.MsgsPerSec, ws.Received, ws.Errors,
			float64(ws.SendLatencyUs.P99)/1e3)
		if l := ws.SendLagUs; l != nil {
			rep.printf(", schedule lag %.2f ms 99th, %.2f ms max", float64(l.P99)/1e3, float64(l.Max)/1e3)
		}
		applied := "applied"
		if ws.ClockAppliedUs == 0 {
			applied = "within its uncertainty: not applied"
		}
		rep.printf("; clock %+.3f ms ± %.3f ms (%s), drift %+.3f ms\n", ws.ClockOffsetUs/1e3, ws.ClockRTTUs/2e3, applied,
			(ws.ClockOffsetAfterUs-ws.ClockOffsetUs)/1e3)
	}
	if res.ClockNote != "" {
		rep.printf("clocks: %s\n", res.ClockNote)
	}
}
