package bench

import (
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, 1 µs to 10 minutes, three
// significant digits (0.1% resolution at every magnitude).
const (
	histMinUs  = 1
	histMaxUs  = 10 * 60 * 1000 * 1000
	histDigits = 3
)

func newHist() *hdr.Histogram { return hdr.New(histMinUs, histMaxUs, histDigits) }

// recordUs adds one duration to h, clamped to the histogram's range.
func recordUs(h *hdr.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < histMinUs {
		us = histMinUs
	} else if us > histMaxUs {
		us = histMaxUs
	}
	_ = h.RecordValue(us)
}

// mergeHists adds every histogram into a new one. Each writer goroutine
// records into a histogram of its own, so recording takes no lock.
func mergeHists(hs []*hdr.Histogram) *hdr.Histogram {
	out := newHist()
	for _, h := range hs {
		out.Merge(h)
	}
	return out
}

// Latency is a latency summary in microseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   int64   `json:"p50"`
	P90   int64   `json:"p90"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p999"`
	Max   int64   `json:"max"`
}

func summarizeHist(h *hdr.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean(),
		P50:   h.ValueAtQuantile(50),
		P90:   h.ValueAtQuantile(90),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		Max:   h.Max(),
	}
}

// Spread is a figure over repeats: the median and how far the repeats lie
// from it (min, max, and the quartiles).
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
	N      int     `json:"n"`
}

// SpreadOf summarises vals (which it does not modify). The quartiles are
// linearly interpolated (R's type 7), so for 3 repeats Q1 and Q3 lie
// halfway between the median and the extremes.
func SpreadOf(vals []float64) Spread {
	if len(vals) == 0 {
		return Spread{}
	}
	v := append([]float64(nil), vals...)
	sort.Float64s(v)
	return Spread{Median: quantile(v, 0.5), Min: v[0], Max: v[len(v)-1],
		Q1: quantile(v, 0.25), Q3: quantile(v, 0.75), N: len(v)}
}

// quantile of sorted v at q in [0,1], linear between closest ranks.
func quantile(v []float64, q float64) float64 {
	if len(v) == 1 {
		return v[0]
	}
	pos := q * float64(len(v)-1)
	lo := int(pos)
	if lo >= len(v)-1 {
		return v[len(v)-1]
	}
	frac := pos - float64(lo)
	return v[lo] + frac*(v[lo+1]-v[lo])
}

// RelSpread is (max-min)/median, the spread as a share of the median (0
// when the median is 0).
func (s Spread) RelSpread() float64 {
	if s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / s.Median
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
