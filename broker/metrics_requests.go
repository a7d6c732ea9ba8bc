package broker

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/samsamq/samsa/protocol"
)

// reqMetrics counts answered requests by request code and response code,
// and times sends and pulls, with atomics only: the send path records into
// it without allocating (TestRequestMetricsZeroAllocs) and without a lock.
// A request code's row of response counters is allocated the first time
// that code is answered, once for the broker's life.
//
// What is timed: from the moment a connection's worker (or, for inline
// sends, its reader) starts processing the request until its answer is
// queued for the writer. A pull held by the long poll is not timed (its
// time is the hold the client asked for); its answer is still counted.
type reqMetrics struct {
	rows  [reqCodeRows]atomic.Pointer[respRow]
	other atomic.Pointer[respRow] // request codes outside [0, reqCodeRows)
	send  latencyHist
	pull  latencyHist
}

const (
	reqCodeRows = 2048 // request codes counted each in its own row
	respCols    = 256  // response codes counted each in its own column
)

// respRow counts one request code's answers; column respCols is every
// response code outside [0, respCols).
type respRow [respCols + 1]atomic.Int64

func (m *reqMetrics) row(code int32) *respRow {
	p := &m.other
	if code >= 0 && int(code) < reqCodeRows {
		p = &m.rows[code]
	}
	if r := p.Load(); r != nil {
		return r
	}
	p.CompareAndSwap(nil, new(respRow))
	return p.Load()
}

// result counts one answer to a request with code req.
func (m *reqMetrics) result(req, resp int32) {
	col := respCols
	if resp >= 0 && int(resp) < respCols {
		col = int(resp)
	}
	m.row(req)[col].Add(1)
}

// done records a request whose processing started at start and whose
// handler returned resp: counted when resp is an answer, timed when it
// is a send or a pull that was answered (not held). A pull's handler
// queues its own answer and returns nil; handlePull counts its result.
func (m *reqMetrics) done(req int32, resp *protocol.Command, start time.Time) {
	if resp == held {
		return
	}
	if resp != nil {
		m.result(req, resp.Code)
	}
	switch req {
	case protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage:
		m.send.observe(time.Since(start))
	case protocol.PullMessage:
		m.pull.observe(time.Since(start))
	}
}

// latencyBuckets are the latency histograms' upper bounds in seconds.
var latencyBuckets = [...]float64{100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10}

// latencyHist is a fixed-bucket histogram of durations, lock-free.
type latencyHist struct {
	buckets [len(latencyBuckets)]atomic.Int64 // each counts the samples at or below its bound, not above the one before
	count   atomic.Int64
	nanos   atomic.Int64
}

func (h *latencyHist) observe(d time.Duration) {
	s := d.Seconds()
	for i, ub := range latencyBuckets {
		if s <= ub {
			h.buckets[i].Add(1)
			break
		}
	}
	h.nanos.Add(int64(d))
	h.count.Add(1)
}

// metric is h as a Prometheus histogram (cumulative buckets).
func (h *latencyHist) metric(d *prometheus.Desc) prometheus.Metric {
	buckets := make(map[float64]uint64, len(latencyBuckets))
	var cum uint64
	for i, ub := range latencyBuckets {
		cum += uint64(h.buckets[i].Load())
		buckets[ub] = cum
	}
	count := uint64(h.count.Load())
	if count < cum { // a sample between its bucket and its count
		count = cum
	}
	return prometheus.MustNewConstHistogram(d, count, float64(h.nanos.Load())/1e9, buckets)
}

var (
	mAnswered = desc("samsa_broker_requests_answered_total", "Requests answered, by request code and response code (a held pull counts when answered).",
		prometheus.CounterValue, "request", "result")
	mSendLat = desc("samsa_broker_send_latency_seconds", "Time from processing a send (single or batch) to queueing its answer: store, flush and replica waits included.",
		prometheus.UntypedValue)
	mPullLat = desc("samsa_broker_pull_latency_seconds", "Time from processing a pull to queueing its answer; pulls held by the long poll are not timed.",
		prometheus.UntypedValue)
)

// collect emits the request counters and latency histograms.
func (m *reqMetrics) collect(ch chan<- prometheus.Metric) {
	emitRow := func(name string, r *respRow) {
		for col := range r {
			n := r[col].Load()
			if n == 0 {
				continue
			}
			result := "OTHER"
			if col < respCols {
				result = protocol.ResponseName(int32(col))
			}
			ch <- prometheus.MustNewConstMetric(mAnswered.d, mAnswered.kind, float64(n), name, result)
		}
	}
	for code := range m.rows {
		if r := m.rows[code].Load(); r != nil {
			emitRow(protocol.RequestName(int32(code)), r)
		}
	}
	if r := m.other.Load(); r != nil {
		emitRow("OTHER", r)
	}
	ch <- m.send.metric(mSendLat.d)
	ch <- m.pull.metric(mPullLat.d)
}
