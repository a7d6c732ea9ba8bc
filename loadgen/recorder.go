package loadgen

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to 10 minutes, three
// significant digits.
const (
	histMinUs  = 1
	histMaxUs  = 10 * 60 * 1000 * 1000
	histDigits = 3
	numShards  = 16
)

func newHist() *hdr.Histogram { return hdr.New(histMinUs, histMaxUs, histDigits) }

// Recorder collects one kind of latency from many goroutines. It keeps a
// histogram of the whole measured run and one of the current report
// interval. Samples are spread over shards, each with its own lock, so
// recording from many goroutines does not serialise on one mutex.
type Recorder struct {
	shards [numShards]recShard
	// measuring is false during warm-up: samples are dropped.
	measuring atomic.Bool
	errors    atomic.Int64
}

type recShard struct {
	mu struct {
		sync.Mutex
		total    *hdr.Histogram
		interval *hdr.Histogram
	}
	_ [40]byte // keep shards' locks off each other's cache lines
}

// NewRecorder returns an empty recorder, not yet measuring.
func NewRecorder() *Recorder {
	r := &Recorder{}
	for i := range r.shards {
		r.shards[i].mu.total = newHist()
		r.shards[i].mu.interval = newHist()
	}
	return r
}

// SetMeasuring starts or stops keeping samples (warm-up ends with true).
func (r *Recorder) SetMeasuring(on bool) { r.measuring.Store(on) }

// Record adds one latency in microseconds (clamped to the histogram range).
func (r *Recorder) Record(us int64) {
	if !r.measuring.Load() {
		return
	}
	if us < histMinUs {
		us = histMinUs
	} else if us > histMaxUs {
		us = histMaxUs
	}
	s := &r.shards[rand.IntN(numShards)]
	s.mu.Lock()
	_ = s.mu.total.RecordValue(us)
	_ = s.mu.interval.RecordValue(us)
	s.mu.Unlock()
}

// RecordError counts a failed operation (warm-up included: errors are
// never hidden).
func (r *Recorder) RecordError() { r.errors.Add(1) }

// Errors is how many errors were recorded.
func (r *Recorder) Errors() int64 { return r.errors.Load() }

// TakeInterval returns the histogram of the interval that just ended and
// starts a new one.
func (r *Recorder) TakeInterval() *hdr.Histogram { return r.merge(false, true) }

// Total returns the histogram of the whole measured run so far.
func (r *Recorder) Total() *hdr.Histogram { return r.merge(true, false) }

// merge is every shard's total (or interval) histogram merged into a new
// one; with reset, the shards' histograms are emptied as they are read.
func (r *Recorder) merge(total, reset bool) *hdr.Histogram {
	out := newHist()
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		h := s.mu.interval
		if total {
			h = s.mu.total
		}
		out.Merge(h)
		if reset {
			h.Reset()
		}
		s.mu.Unlock()
	}
	return out
}

// Percentiles is a latency summary in microseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   int64   `json:"p50"`
	P75   int64   `json:"p75,omitempty"`
	P95   int64   `json:"p95"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p999"`
	P9999 int64   `json:"p9999,omitempty"`
	Max   int64   `json:"max"`
}

// Summarize reads the percentiles off a histogram.
func Summarize(h *hdr.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	return Percentiles{
		Count: h.TotalCount(),
		Mean:  h.Mean(),
		P50:   h.ValueAtQuantile(50),
		P75:   h.ValueAtQuantile(75),
		P95:   h.ValueAtQuantile(95),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		P9999: h.ValueAtQuantile(99.99),
		Max:   h.Max(),
	}
}
