package omb

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/samsamq/samsa/loadgen"
)

// How Samsa's figures map onto OMB's:
//
//   - publish latency is from the actual send to the acknowledgement
//     (loadgen's service latency; OMB's publishLatency);
//   - publish delay is how late each send started after its intended
//     time (loadgen's schedule lag; OMB's publishDelayLatency, µs);
//   - end-to-end latency is from the intended send time to the
//     consumer's handler. OMB counts from the actual send, so Samsa's
//     figure is OMB's plus the publish delay: never lower.
//   - rates are per report interval (10 s, or shorter in a quick run) of
//     the measured window, backlog the acknowledged messages not yet
//     received at each interval's end.

// TestResult is OMB's JSON result file (its TestResult class), with the
// same field names and units: latencies in ms, publish delay in µs, one
// list entry per report interval.
type TestResult struct {
	Workload          string `json:"workload"`
	Driver            string `json:"driver"`
	MessageSize       int64  `json:"messageSize"`
	Topics            int    `json:"topics"`
	Partitions        int    `json:"partitions"`
	ProducersPerTopic int    `json:"producersPerTopic"`
	ConsumersPerTopic int    `json:"consumersPerTopic"`

	PublishRate      []float64 `json:"publishRate"`
	PublishErrorRate []float64 `json:"publishErrorRate"`
	ConsumeRate      []float64 `json:"consumeRate"`
	Backlog          []int64   `json:"backlog"`

	PublishLatencyAvg     []float64 `json:"publishLatencyAvg"`
	PublishLatency50pct   []float64 `json:"publishLatency50pct"`
	PublishLatency75pct   []float64 `json:"publishLatency75pct"`
	PublishLatency95pct   []float64 `json:"publishLatency95pct"`
	PublishLatency99pct   []float64 `json:"publishLatency99pct"`
	PublishLatency999pct  []float64 `json:"publishLatency999pct"`
	PublishLatency9999pct []float64 `json:"publishLatency9999pct"`
	PublishLatencyMax     []float64 `json:"publishLatencyMax"`

	PublishDelayLatencyAvg     []float64 `json:"publishDelayLatencyAvg"`
	PublishDelayLatency50pct   []int64   `json:"publishDelayLatency50pct"`
	PublishDelayLatency75pct   []int64   `json:"publishDelayLatency75pct"`
	PublishDelayLatency95pct   []int64   `json:"publishDelayLatency95pct"`
	PublishDelayLatency99pct   []int64   `json:"publishDelayLatency99pct"`
	PublishDelayLatency999pct  []int64   `json:"publishDelayLatency999pct"`
	PublishDelayLatency9999pct []int64   `json:"publishDelayLatency9999pct"`
	PublishDelayLatencyMax     []int64   `json:"publishDelayLatencyMax"`

	AggregatedPublishLatencyAvg     float64 `json:"aggregatedPublishLatencyAvg"`
	AggregatedPublishLatency50pct   float64 `json:"aggregatedPublishLatency50pct"`
	AggregatedPublishLatency75pct   float64 `json:"aggregatedPublishLatency75pct"`
	AggregatedPublishLatency95pct   float64 `json:"aggregatedPublishLatency95pct"`
	AggregatedPublishLatency99pct   float64 `json:"aggregatedPublishLatency99pct"`
	AggregatedPublishLatency999pct  float64 `json:"aggregatedPublishLatency999pct"`
	AggregatedPublishLatency9999pct float64 `json:"aggregatedPublishLatency9999pct"`
	AggregatedPublishLatencyMax     float64 `json:"aggregatedPublishLatencyMax"`

	AggregatedPublishDelayLatencyAvg     float64 `json:"aggregatedPublishDelayLatencyAvg"`
	AggregatedPublishDelayLatency50pct   int64   `json:"aggregatedPublishDelayLatency50pct"`
	AggregatedPublishDelayLatency75pct   int64   `json:"aggregatedPublishDelayLatency75pct"`
	AggregatedPublishDelayLatency95pct   int64   `json:"aggregatedPublishDelayLatency95pct"`
	AggregatedPublishDelayLatency99pct   int64   `json:"aggregatedPublishDelayLatency99pct"`
	AggregatedPublishDelayLatency999pct  int64   `json:"aggregatedPublishDelayLatency999pct"`
	AggregatedPublishDelayLatency9999pct int64   `json:"aggregatedPublishDelayLatency9999pct"`
	AggregatedPublishDelayLatencyMax     int64   `json:"aggregatedPublishDelayLatencyMax"`

	AggregatedPublishLatencyQuantiles      map[string]float64 `json:"aggregatedPublishLatencyQuantiles"`
	AggregatedPublishDelayLatencyQuantiles map[string]int64   `json:"aggregatedPublishDelayLatencyQuantiles"`

	EndToEndLatencyAvg     []float64 `json:"endToEndLatencyAvg"`
	EndToEndLatency50pct   []float64 `json:"endToEndLatency50pct"`
	EndToEndLatency75pct   []float64 `json:"endToEndLatency75pct"`
	EndToEndLatency95pct   []float64 `json:"endToEndLatency95pct"`
	EndToEndLatency99pct   []float64 `json:"endToEndLatency99pct"`
	EndToEndLatency999pct  []float64 `json:"endToEndLatency999pct"`
	EndToEndLatency9999pct []float64 `json:"endToEndLatency9999pct"`
	EndToEndLatencyMax     []float64 `json:"endToEndLatencyMax"`

	AggregatedEndToEndLatencyQuantiles map[string]float64 `json:"aggregatedEndToEndLatencyQuantiles"`
	AggregatedEndToEndLatencyAvg       float64            `json:"aggregatedEndToEndLatencyAvg"`
	AggregatedEndToEndLatency50pct     float64            `json:"aggregatedEndToEndLatency50pct"`
	AggregatedEndToEndLatency75pct     float64            `json:"aggregatedEndToEndLatency75pct"`
	AggregatedEndToEndLatency95pct     float64            `json:"aggregatedEndToEndLatency95pct"`
	AggregatedEndToEndLatency99pct     float64            `json:"aggregatedEndToEndLatency99pct"`
	AggregatedEndToEndLatency999pct    float64            `json:"aggregatedEndToEndLatency999pct"`
	AggregatedEndToEndLatency9999pct   float64            `json:"aggregatedEndToEndLatency9999pct"`
	AggregatedEndToEndLatencyMax       float64            `json:"aggregatedEndToEndLatencyMax"`
}

func ms(us int64) float64 { return float64(us) / 1e3 }

// msFields are where one latency's eight OMB figures go (avg, 50, 75, 95,
// 99, 99.9, 99.99 and max), in ms.
type msFields [8]*float64

func (f msFields) set(p loadgen.Percentiles) {
	for i, v := range [8]float64{p.Mean / 1e3, ms(p.P50), ms(p.P75), ms(p.P95), ms(p.P99), ms(p.P999), ms(p.P9999), ms(p.Max)} {
		*f[i] = v
	}
}

// msSeries are where one latency's eight per-interval lists go, in ms.
type msSeries [8]*[]float64

func (s msSeries) add(p loadgen.Percentiles) {
	for i, v := range [8]float64{p.Mean / 1e3, ms(p.P50), ms(p.P75), ms(p.P95), ms(p.P99), ms(p.P999), ms(p.P9999), ms(p.Max)} {
		*s[i] = append(*s[i], v)
	}
}

// NewTestResult gives res in OMB's result form.
func NewTestResult(w *loadgen.OMBWorkload, res *loadgen.Result) (*TestResult, error) {
	t := &TestResult{Workload: w.Name, Driver: res.Driver, MessageSize: int64(w.MessageSize), Topics: w.Topics,
		Partitions: w.PartitionsPerTopic, ProducersPerTopic: w.ProducersPerTopic, ConsumersPerTopic: w.ConsumerPerSubscription}
	pub := msSeries{&t.PublishLatencyAvg, &t.PublishLatency50pct, &t.PublishLatency75pct, &t.PublishLatency95pct,
		&t.PublishLatency99pct, &t.PublishLatency999pct, &t.PublishLatency9999pct, &t.PublishLatencyMax}
	e2e := msSeries{&t.EndToEndLatencyAvg, &t.EndToEndLatency50pct, &t.EndToEndLatency75pct, &t.EndToEndLatency95pct,
		&t.EndToEndLatency99pct, &t.EndToEndLatency999pct, &t.EndToEndLatency9999pct, &t.EndToEndLatencyMax}
	for _, iv := range res.Intervals {
		t.PublishRate = append(t.PublishRate, iv.PublishRate)
		t.PublishErrorRate = append(t.PublishErrorRate, iv.ErrorRate)
		t.ConsumeRate = append(t.ConsumeRate, iv.ConsumeRate)
		t.Backlog = append(t.Backlog, iv.Backlog)
		pub.add(iv.ServiceUs)
		e2e.add(iv.E2EUs)
		d := iv.LagUs // OMB's publish delay: µs, whole
		t.PublishDelayLatencyAvg = append(t.PublishDelayLatencyAvg, d.Mean)
		t.PublishDelayLatency50pct = append(t.PublishDelayLatency50pct, d.P50)
		t.PublishDelayLatency75pct = append(t.PublishDelayLatency75pct, d.P75)
		t.PublishDelayLatency95pct = append(t.PublishDelayLatency95pct, d.P95)
		t.PublishDelayLatency99pct = append(t.PublishDelayLatency99pct, d.P99)
		t.PublishDelayLatency999pct = append(t.PublishDelayLatency999pct, d.P999)
		t.PublishDelayLatency9999pct = append(t.PublishDelayLatency9999pct, d.P9999)
		t.PublishDelayLatencyMax = append(t.PublishDelayLatencyMax, d.Max)
	}
	if p := res.ServiceLatencyUs; p != nil {
		msFields{&t.AggregatedPublishLatencyAvg, &t.AggregatedPublishLatency50pct, &t.AggregatedPublishLatency75pct,
			&t.AggregatedPublishLatency95pct, &t.AggregatedPublishLatency99pct, &t.AggregatedPublishLatency999pct,
			&t.AggregatedPublishLatency9999pct, &t.AggregatedPublishLatencyMax}.set(*p)
	}
	if d := res.SendLagUs; d != nil {
		t.AggregatedPublishDelayLatencyAvg = d.Mean
		t.AggregatedPublishDelayLatency50pct, t.AggregatedPublishDelayLatency75pct = d.P50, d.P75
		t.AggregatedPublishDelayLatency95pct, t.AggregatedPublishDelayLatency99pct = d.P95, d.P99
		t.AggregatedPublishDelayLatency999pct, t.AggregatedPublishDelayLatency9999pct = d.P999, d.P9999
		t.AggregatedPublishDelayLatencyMax = d.Max
	}
	msFields{&t.AggregatedEndToEndLatencyAvg, &t.AggregatedEndToEndLatency50pct, &t.AggregatedEndToEndLatency75pct,
		&t.AggregatedEndToEndLatency95pct, &t.AggregatedEndToEndLatency99pct, &t.AggregatedEndToEndLatency999pct,
		&t.AggregatedEndToEndLatency9999pct, &t.AggregatedEndToEndLatencyMax}.set(res.E2ELatencyUs)
	// The quantile maps: the send histogram stands for publish latency
	// (the service histogram is not kept whole; open loop, the two differ
	// by the publish delay).
	send, e2eH, err := res.Histograms()
	if err != nil {
		return nil, err
	}
	t.AggregatedPublishLatencyQuantiles = quantiles(send)
	t.AggregatedEndToEndLatencyQuantiles = quantiles(e2eH)
	t.AggregatedPublishDelayLatencyQuantiles = map[string]int64{}
	return t, nil
}

// quantiles is OMB's quantile map of h (µs) in ms: the percentile
// spectrum with 100 ticks per half distance, keyed by percentile.
func quantiles(h *hdr.Histogram) map[string]float64 {
	out := map[string]float64{}
	if h == nil {
		return out
	}
	for _, b := range h.CumulativeDistributionWithTicks(100) {
		out[fmt.Sprintf("%g", b.Quantile)] = ms(b.ValueAt)
	}
	return out
}

// WriteJSON writes t as OMB writes its result files.
func (t *TestResult) WriteJSON(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Report prints the run's headline figures in OMB's aggregated form:
// publish rate, publish latency, publish delay, end-to-end latency and,
// with a backlog phase, the drain.
func Report(out io.Writer, w *loadgen.OMBWorkload, res *loadgen.Result) {
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format, a...) }
	p("----- OMB workload %q on %s: %s -----\n", w.Name, res.Driver, summary(w))
	p("Pub rate %.1f msg/s / %.2f MB/s | Cons rate %.1f msg/s | Pub errors %d\n",
		res.MsgsPerSec, res.MsgsPerSec*float64(w.MessageSize)/(1<<20), res.ConsumedPerSec, res.Errors)
	if s := res.ServiceLatencyUs; s != nil {
		p("Aggregated Pub Latency (ms) avg: %.2f - 50%%: %.2f - 95%%: %.2f - 99%%: %.2f - 99.9%%: %.2f - 99.99%%: %.2f - Max: %.2f\n",
			s.Mean/1e3, ms(s.P50), ms(s.P95), ms(s.P99), ms(s.P999), ms(s.P9999), ms(s.Max))
	}
	if d := res.SendLagUs; d != nil {
		p("Aggregated Pub Delay (us) avg: %.1f - 50%%: %d - 95%%: %d - 99%%: %d - 99.9%%: %d - 99.99%%: %d - Max: %d\n",
			d.Mean, d.P50, d.P95, d.P99, d.P999, d.P9999, d.Max)
	}
	if !res.Workload.NoConsumers {
		e := res.E2ELatencyUs
		p("Aggregated E2E Latency (ms) avg: %.2f - 50%%: %.2f - 95%%: %.2f - 99%%: %.2f - 99.9%%: %.2f - 99.99%%: %.2f - Max: %.2f (from the intended send time)\n",
			e.Mean/1e3, ms(e.P50), ms(e.P95), ms(e.P99), ms(e.P999), ms(e.P9999), ms(e.Max))
	}
	if bp := res.Backlog; bp != nil {
		p("Backlog %.2f GB: built in %.1f s, drained in %.1f s at %.1f msg/s (%.2f MB/s)",
			float64(bp.Bytes)/(1<<30), bp.BuildSeconds, bp.DrainSeconds, bp.DrainMsgsPerSec, bp.DrainMBPerSec)
		if bp.TimedOut != "" {
			p("; the %s did not finish in time", bp.TimedOut)
		}
		p("\n")
	}
}

// summary is the workload's shape in one line.
func summary(w *loadgen.OMBWorkload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d topic(s) × %d partition(s), %d B, %d producer(s)/topic at %g msg/s, %d subscription(s) × %d consumer(s)",
		w.Topics, w.PartitionsPerTopic, w.MessageSize, w.ProducersPerTopic, w.ProducerRate, w.SubscriptionsPerTopic, w.ConsumerPerSubscription)
	if w.ConsumerBacklogSizeGB > 0 {
		fmt.Fprintf(&b, ", backlog %g GB", w.ConsumerBacklogSizeGB)
	}
	return b.String()
}
