package distrib

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/loadgen"
)

const testToken = "0123456789abcdef-test-token"

// memDriver is one in-memory "cluster" the workers of a test share: a
// topic's every subscriber gets every message, synchronously, before the
// send is acknowledged.
type memDriver struct {
	mu   sync.Mutex
	subs map[string]map[*memSub]bool
}

type memSub struct {
	d     *memDriver
	topic string
	h     loadgen.Handler
}

func newMemDriver() *memDriver { return &memDriver{subs: map[string]map[*memSub]bool{}} }

func (d *memDriver) Name() string                                   { return "mem" }
func (d *memDriver) Describe() map[string]any                       { return map[string]any{"kind": "test"} }
func (d *memDriver) Close() error                                   { return nil } // shared: the test owns it
func (d *memDriver) CreateTopic(context.Context, string, int) error { return nil }

func (d *memDriver) NewProducer(_ context.Context, topic string, _ loadgen.ProducerOptions) (loadgen.Producer, error) {
	return &memProducer{d: d, topic: topic}, nil
}

func (d *memDriver) NewConsumer(_ context.Context, topic, _ string, _ loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	s := &memSub{d: d, topic: topic, h: h}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.subs[topic] == nil {
		d.subs[topic] = map[*memSub]bool{}
	}
	d.subs[topic][s] = true
	return s, nil
}

func (s *memSub) Close() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	delete(s.d.subs[s.topic], s)
	return nil
}

type memProducer struct {
	d     *memDriver
	topic string
}

func (p *memProducer) Send(_ context.Context, _ string, payload []byte, done func(error)) {
	p.d.mu.Lock()
	var hs []loadgen.Handler
	for s := range p.d.subs[p.topic] {
		hs = append(hs, s.h)
	}
	p.d.mu.Unlock()
	for _, h := range hs {
		h(payload)
	}
	done(nil)
}

func (p *memProducer) Close() error { return nil }

// testWorker is a worker serving on loopback.
type testWorker struct {
	w       *Worker
	addr    string
	drivers atomic.Int64 // drivers made: runs begun
	stop    func()
}

func startWorker(t *testing.T, d loadgen.Driver, lease time.Duration) *testWorker {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tw := &testWorker{addr: l.Addr().String()}
	tw.w, err = NewWorker(WorkerOptions{Token: testToken, Lease: lease, Driver: func(context.Context, DriverSpec) (loadgen.Driver, error) {
		tw.drivers.Add(1)
		return d, nil
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tw.w.Serve(ctx, l) }()
	var once sync.Once
	tw.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(tw.stop)
	return tw
}

// current is the worker's current run, nil before one.
func (tw *testWorker) current() *workerRun {
	tw.w.mu.Lock()
	defer tw.w.mu.Unlock()
	return tw.w.mu.run
}

// waitFor polls cond every 10 ms for up to a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func quickWorkload() loadgen.Workload {
	return loadgen.Workload{MessageSize: 32, Producers: 2, ConsumerGroups: 2, Rate: 400,
		Warmup: 100 * time.Millisecond, Duration: 600 * time.Millisecond, ReportInterval: 100 * time.Millisecond,
		Drain: 5 * time.Second}
}

func testOptions(w loadgen.Workload, out io.Writer, workers ...*testWorker) Options {
	o := Options{Token: testToken, Workload: w, Driver: DriverSpec{Driver: "mem"}, Out: out,
		PollInterval: 20 * time.Millisecond, StartDelay: 300 * time.Millisecond}
	for _, tw := range workers {
		o.Workers = append(o.Workers, tw.addr)
	}
	return o
}

// TestTwoWorkersMerge: two workers, each with one producer and one of
// the two groups' consumers, so every group gets messages from both:
// the merged counts and histograms are the sums of the workers'.
func TestTwoWorkersMerge(t *testing.T) {
	d := newMemDriver()
	a, b := startWorker(t, d, 0), startWorker(t, d, 0)
	var out bytes.Buffer
	res, err := Run(context.Background(), testOptions(quickWorkload(), &out, a, b))
	require.NoError(t, err, out.String())

	require.Len(t, res.Workers, 2)
	var acked, received, sendN, e2eN int64
	for _, ws := range res.Workers {
		require.Equal(t, 1, ws.Producers)
		require.Equal(t, 1, ws.Consumers)
		require.Greater(t, ws.ClockRTTUs, 0.0)
		require.Greater(t, ws.Acked, int64(0))
		acked, received = acked+ws.Acked, received+ws.Received
		sendN, e2eN = sendN+ws.SendLatencyUs.Count, e2eN+ws.E2ELatencyUs.Count
	}
	require.Equal(t, acked, res.Acked)
	require.Equal(t, received, res.Received)
	require.Equal(t, 2*res.Acked, res.Received, "each group got each message, from both workers' producers")
	require.Zero(t, res.NeverReceived)
	require.Zero(t, res.Duplicates)
	require.True(t, res.Drained)
	require.Equal(t, sendN, res.SendLatencyUs.Count)
	require.Equal(t, e2eN, res.E2ELatencyUs.Count)
	send, e2e, err := res.Histograms()
	require.NoError(t, err)
	require.Equal(t, sendN, send.TotalCount())
	require.Equal(t, e2eN, e2e.TotalCount())
	require.Nil(t, res.Deliveries)
	require.NotEmpty(t, res.ClockNote)
	require.Contains(t, out.String(), "2 workers")
	require.Contains(t, out.String(), "records received")
	for _, tw := range []*testWorker{a, b} {
		require.Equal(t, int64(1), tw.drivers.Load())
		require.Equal(t, phaseDone, tw.current().phase)
	}
}

// TestWorkerKilledFailsRun: a worker that dies mid-run fails the run with
// an error naming it, and the other worker's run is stopped.
func TestWorkerKilledFailsRun(t *testing.T) {
	d := newMemDriver()
	a, b := startWorker(t, d, 0), startWorker(t, d, 0)
	w := quickWorkload()
	w.Duration = time.Minute // long enough to be killed in
	o := testOptions(w, io.Discard, a, b)
	o.HeartbeatTimeout = 2 * time.Second
	errc := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), o)
		errc <- err
	}()
	waitFor(t, "worker b to send", func() bool {
		wr := b.current()
		return wr != nil && wr.part.Counts().Acked > 0
	})
	b.stop()
	var err error
	select {
	case err = <-errc:
	case <-time.After(60 * time.Second):
		t.Fatal("the run went on without worker b")
	}
	require.ErrorContains(t, err, "worker "+b.addr)
	require.NotContains(t, err.Error(), "worker "+a.addr)
	wr := a.current()
	select {
	case <-wr.done:
	case <-time.After(30 * time.Second):
		t.Fatal("worker a's run was not stopped")
	}
	require.Equal(t, phaseFailed, wr.phase)
	require.ErrorContains(t, wr.err, "stopped by the coordinator")
}

// TestWrongTokenRunsNothing: a coordinator with the wrong token, and a
// request with none, are refused; no driver is made, no run begins.
func TestWrongTokenRunsNothing(t *testing.T) {
	d := newMemDriver()
	a := startWorker(t, d, 0)
	o := testOptions(quickWorkload(), io.Discard, a)
	o.Token = "another-token-of-enough-bytes"
	_, err := Run(context.Background(), o)
	require.ErrorContains(t, err, "worker "+a.addr)
	require.ErrorContains(t, err, "refused the token")

	body, err := json.Marshal(prepareRequest{Run: "r1", Workers: 1, Workload: quickWorkload(), Driver: DriverSpec{Driver: "mem"}})
	require.NoError(t, err)
	for _, auth := range []string{"", "Bearer ", "Bearer " + testToken[:len(testToken)-1], testToken, "Basic " + testToken} {
		req, err := http.NewRequest(http.MethodPost, "http://"+a.addr+pathPrepare, bytes.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "auth %q", auth)
	}
	require.Zero(t, a.drivers.Load())
	require.Nil(t, a.current())
}

// post sends body to the worker with the right token.
func post(t *testing.T, addr, path string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestWorkerBounds: an oversized body and a workload past the bounds are
// refused before anything runs.
func TestWorkerBounds(t *testing.T) {
	a := startWorker(t, newMemDriver(), 0)
	code, _ := post(t, a.addr, pathPrepare, bytes.Repeat([]byte(" "), maxRequestBody+1))
	require.Equal(t, http.StatusBadRequest, code)

	w := quickWorkload()
	w.Topics, w.ConsumerGroups, w.Consumers = 1000, 100, 100
	body, err := json.Marshal(prepareRequest{Run: "r1", Workers: 1, Workload: w, Driver: DriverSpec{Driver: "mem"}})
	require.NoError(t, err)
	code, msg := post(t, a.addr, pathPrepare, body)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "topics × groups × consumers")

	w = quickWorkload()
	w.PayloadFile = "/etc/passwd"
	body, err = json.Marshal(prepareRequest{Run: "r1", Workers: 1, Workload: w, Driver: DriverSpec{Driver: "mem"}})
	require.NoError(t, err)
	code, msg = post(t, a.addr, pathPrepare, body)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "reads no files")
	require.Zero(t, a.drivers.Load())
	require.Nil(t, a.current())
}

// TestLeaseStopsOrphanedRun: a run whose coordinator is never heard from
// again is stopped by the worker.
func TestLeaseStopsOrphanedRun(t *testing.T) {
	a := startWorker(t, newMemDriver(), 300*time.Millisecond)
	body, err := json.Marshal(prepareRequest{Run: "r1", Workers: 1, Workload: quickWorkload(), Driver: DriverSpec{Driver: "mem"}})
	require.NoError(t, err)
	code, msg := post(t, a.addr, pathPrepare, body)
	require.Equal(t, http.StatusOK, code, msg)
	wr := a.current()
	select {
	case <-wr.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the orphaned run went on")
	}
	require.Equal(t, phaseFailed, wr.phase)
	require.ErrorContains(t, wr.err, "not heard from")
}

// TestSplitGivesEveryWorkerSomething: more workers than producers and
// consumers is refused, naming the idle worker.
func TestSplitGivesEveryWorkerSomething(t *testing.T) {
	w := quickWorkload()
	w.Producers, w.ConsumerGroups = 1, 1
	o := Options{Token: testToken, Workload: w, Workers: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}}
	o.ensureDefaults()
	_, err := newCoord(o)
	require.ErrorContains(t, err, "worker 127.0.0.1:3 would run nothing")
	require.True(t, strings.Contains(err.Error(), "1 producers and 1 consumers"), err.Error())
}

// TestClockOffset: a worker whose clock is 5 s ahead measures so, and
// the correction is applied; an offset within its uncertainty is not.
func TestClockOffset(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		reply(rw, http.StatusOK, clockResponse{NowNs: time.Now().Add(5 * time.Second).UnixNano()})
	}))
	defer srv.Close()
	c := &coord{o: Options{Token: testToken}}
	c.o.ensureDefaults()
	s, err := c.measureClock(context.Background(), &remote{addr: "skewed", base: srv.URL})
	require.NoError(t, err)
	require.Greater(t, s.rtt, time.Duration(0))
	require.InDelta(t, float64(5*time.Second), float64(s.offset), float64(s.rtt/2)+float64(time.Millisecond))
	require.Equal(t, s.offset, s.applied())
	require.Zero(t, clockSample{offset: 40 * time.Microsecond, rtt: 100 * time.Microsecond}.applied())
	require.Equal(t, -80*time.Microsecond, clockSample{offset: -80 * time.Microsecond, rtt: 100 * time.Microsecond}.applied())
}
