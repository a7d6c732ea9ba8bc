package distrib

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/loadgen"
)

// Options configure a coordinator's run.
type Options struct {
	// Workers are the workers' addresses (host:port, or an http:// URL).
	// Required; each gets one share.
	Workers []string
	// Token is the workers' shared secret. Required.
	Token string
	// Workload is the whole run's; its payload file, if any, is read here
	// and its bytes sent (a worker reads no files). Its backlog phase is
	// refused.
	Workload loadgen.Workload
	// Driver is what each worker drives, and where the cluster is: one
	// cluster every worker reaches.
	Driver DriverSpec
	// Out gets the progress lines and the merged summary; default
	// os.Stdout.
	Out io.Writer
	// Client makes the requests; default a client of its own.
	Client *http.Client

	// RequestTimeout bounds each request but a result's; default 5s.
	RequestTimeout time.Duration
	// ResultTimeout bounds fetching a share's result; default 2m.
	ResultTimeout time.Duration
	// PrepareTimeout bounds a worker's preparation (driver, topics,
	// consumers, producers), on top of the workload's SetupTimeout;
	// default 2m.
	PrepareTimeout time.Duration
	// StartDelay is how far ahead of now the start time is set, for the
	// start command to reach every worker first; default 2s. A worker
	// told late starts late: its producers catch up the schedule in the
	// warm-up, and their lag shows it.
	StartDelay time.Duration
	// PollInterval is how often every worker's status is read (the
	// heartbeat); default 250ms.
	PollInterval time.Duration
	// HeartbeatTimeout: a worker that has not answered for this long
	// fails the run; default 10s.
	HeartbeatTimeout time.Duration
	// ClockSamples is how many clock requests measure a worker's offset
	// (the one with the smallest round trip counts); default 8.
	ClockSamples int
	// MaxResultBytes bounds a share's result; default
	// DefaultMaxResultBytes.
	MaxResultBytes int64
}

func (o *Options) ensureDefaults() {
	def := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.RequestTimeout, 5*time.Second)
	def(&o.ResultTimeout, 2*time.Minute)
	def(&o.PrepareTimeout, 2*time.Minute)
	def(&o.StartDelay, 2*time.Second)
	def(&o.PollInterval, 250*time.Millisecond)
	def(&o.HeartbeatTimeout, 10*time.Second)
	if o.ClockSamples <= 0 {
		o.ClockSamples = 8
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
			ResponseHeaderTimeout: o.ResultTimeout}}
	}
}

// remote is one worker as the coordinator sees it.
type remote struct {
	i      int
	addr   string // as given: the name errors use
	base   string // its URL
	clock  clockSample
	after  clockSample
	lastOK time.Time
	st     statusResponse
	stErr  error // the last poll's error
	// producers and consumers are how many the worker's share has.
	producers, consumers int
}

func (w *remote) String() string { return fmt.Sprintf("worker %s", w.addr) }

// coord is one run's coordinator.
type coord struct {
	o       Options
	w       loadgen.Workload // the coordinator's, payload file and all
	wire    loadgen.Workload // the workers': no file
	payload []byte
	runID   string
	tag     uint16
	workers []*remote
}

// Run runs o.Workload over o.Workers and returns the merged result: a
// normal loadgen.Result (counts summed, histograms merged exactly,
// deliveries joined) with a WorkerShare per worker (its clock offset,
// round trip and drift; its share's figures) and a ClockNote. A worker
// that fails, or stops answering for HeartbeatTimeout, fails the run with
// an error naming it; the others are told to stop. Every wait has a
// deadline. Cancelling ctx stops the workers and returns ctx's error.
func Run(ctx context.Context, o Options) (*loadgen.Result, error) {
	o.ensureDefaults()
	c, err := newCoord(o)
	if err != nil {
		return nil, err
	}
	res, err := c.run(ctx)
	if err != nil {
		c.stopAll()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("distrib: %w (the workers were told to stop)", ctx.Err())
		}
		return nil, fmt.Errorf("distrib: %w (the other workers were told to stop)", err)
	}
	return res, nil
}

func newCoord(o Options) (*coord, error) {
	if err := CheckToken(o.Token); err != nil {
		return nil, err
	}
	if len(o.Workers) == 0 || len(o.Workers) > maxWorkers {
		return nil, fmt.Errorf("distrib: 1 to %d workers, got %d", maxWorkers, len(o.Workers))
	}
	c := &coord{o: o, w: o.Workload}
	c.w.EnsureDefaults()
	if err := c.w.Validate(); err != nil {
		return nil, fmt.Errorf("distrib: workload: %w", err)
	}
	c.wire = c.w
	if c.w.PayloadFile != "" {
		b, err := readPayload(c.w.PayloadFile, c.w.MessageSize)
		if err != nil {
			return nil, err
		}
		c.payload, c.wire.PayloadFile = b, ""
	}
	if err := checkWorkload(&c.wire, c.payload); err != nil {
		return nil, fmt.Errorf("distrib: workload: %w", err)
	}
	producers, consumers := loadgen.Split(&c.w, len(o.Workers))
	seen := map[string]bool{}
	for i, addr := range o.Workers {
		base := addr
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		u, err := url.Parse(base)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("distrib: worker address %q: want host:port or an http(s) URL", addr)
		}
		base = u.Scheme + "://" + u.Host
		if seen[base] {
			return nil, fmt.Errorf("distrib: worker %s named twice", addr)
		}
		seen[base] = true
		w := &remote{i: i, addr: addr, base: base, producers: len(producers[i]), consumers: len(consumers[i])}
		if w.producers+w.consumers == 0 {
			return nil, fmt.Errorf("distrib: %s would run nothing: %d workers for %d producers and %d consumers",
				w, len(o.Workers), c.w.Topics*c.w.Producers, c.w.Topics*c.w.ConsumerGroups*c.w.Consumers*boolInt(!c.w.NoConsumers))
		}
		c.workers = append(c.workers, w)
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand's Read never fails
	c.runID = hex.EncodeToString(id[:])
	c.tag = binary.BigEndian.Uint16(id[:2])
	return c, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readPayload is the first size bytes of the payload file (the share
// repeats them to the message size, as a whole run does the file's).
func readPayload(path string, size int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("distrib: payload file: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, int64(min(size, maxPayload+1))))
	if err != nil {
		return nil, fmt.Errorf("distrib: payload file: %w", err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("distrib: payload file %s is empty", path)
	}
	if len(b) > maxPayload {
		return nil, fmt.Errorf("distrib: payload file: messages over %d bytes from a file are not sent to workers", maxPayload)
	}
	return b, nil
}

// run is the course: clocks, prepare, start, watch, drain, results.
func (c *coord) run(ctx context.Context) (*loadgen.Result, error) {
	w := &c.w
	if err := c.each(func(r *remote) error {
		var err error
		r.clock, err = c.measureClock(ctx, r)
		return err
	}); err != nil {
		return nil, err
	}
	c.printf("loadgen: %d workers, run %s; clocks against this one's:", len(c.workers), c.runID)
	for _, r := range c.workers {
		c.printf(" %s %+.3f ms ± %.3f ms;", r.addr, ms(r.clock.offset), ms(r.clock.rtt/2))
	}
	c.printf("\n")

	// The first worker makes the topics before the others subscribe.
	prepDeadline := time.Now().Add(c.o.PrepareTimeout + w.SetupTimeout)
	if err := c.prepare(ctx, c.workers[0]); err != nil {
		return nil, err
	}
	if err := c.pollUntil(ctx, "ready", prepDeadline, c.workers[:1], func() bool { return c.allIn(c.workers[:1], phaseReady) }); err != nil {
		return nil, err
	}
	if err := c.each(func(r *remote) error {
		if r.i == 0 {
			return nil
		}
		return c.prepare(ctx, r)
	}); err != nil {
		return nil, err
	}
	if err := c.pollUntil(ctx, "ready", prepDeadline, c.workers, func() bool { return c.allIn(c.workers, phaseReady) }); err != nil {
		return nil, err
	}

	start := time.Now().Add(c.o.StartDelay)
	if err := c.each(func(r *remote) error {
		return c.post(ctx, r, pathStart, startRequest{Run: c.runID, StartNs: start.UnixNano()})
	}); err != nil {
		return nil, err
	}
	c.printf("loadgen: start at %s; warm-up %s, window %s\n", start.UTC().Format(time.RFC3339Nano), w.Warmup, w.Duration)

	// The producers stop at the window's end, or their grace (Drain)
	// after it; then each worker waits for the coordinator's drained.
	windowEnd := start.Add(w.Warmup + w.Duration)
	prog := &progress{c: c, warmupEnd: start.Add(w.Warmup), last: time.Now()}
	if err := c.pollUntil(ctx, "done producing", windowEnd.Add(w.Drain+c.o.HeartbeatTimeout+time.Minute), c.workers, func() bool {
		prog.maybe()
		return c.allIn(c.workers, phaseDraining)
	}); err != nil {
		return nil, err
	}
	caughtUp := false
	drainDeadline := time.Now().Add(w.Drain)
	if err := c.pollUntil(ctx, "drained", drainDeadline.Add(c.o.HeartbeatTimeout), c.workers, func() bool {
		prog.maybe()
		caughtUp = c.caughtUp()
		return caughtUp || time.Now().After(drainDeadline)
	}); err != nil {
		return nil, err
	}
	if err := c.each(func(r *remote) error {
		return c.post(ctx, r, pathDrained, drainedRequest{Run: c.runID, CaughtUp: caughtUp})
	}); err != nil {
		return nil, err
	}
	if err := c.pollUntil(ctx, "done", time.Now().Add(c.o.PrepareTimeout), c.workers, func() bool { return c.allIn(c.workers, phaseDone) }); err != nil {
		return nil, err
	}

	shares := make([]*loadgen.Result, len(c.workers))
	for _, r := range c.workers { // one at a time: one result in memory being read
		var err error
		if shares[r.i], err = c.fetchResult(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := c.each(func(r *remote) error {
		var err error
		r.after, err = c.measureClock(ctx, r)
		return err
	}); err != nil {
		return nil, err
	}
	res, err := loadgen.Merge(c.w, shares)
	if err != nil {
		return nil, err
	}
	for _, r := range c.workers {
		s := shares[r.i]
		ws := loadgen.WorkerShare{Worker: r.addr, Host: r.st.Host, Producers: r.producers, Consumers: r.consumers,
			Acked: s.Acked, Received: s.Received, Errors: s.Errors, MsgsPerSec: s.MsgsPerSec,
			SendLatencyUs: s.SendLatencyUs, SendLagUs: s.SendLagUs, E2ELatencyUs: s.E2ELatencyUs}
		ws.ClockOffsetUs, ws.ClockRTTUs, ws.ClockAppliedUs = us(r.clock.offset), us(r.clock.rtt), us(r.clock.applied())
		ws.ClockOffsetAfterUs = us(r.after.offset)
		res.Workers = append(res.Workers, ws)
	}
	res.ClockNote = clockNote
	loadgen.PrintSummary(c.o.Out, res)
	return res, nil
}

// clockNote says what the workers' clocks mean for e2e latency.
const clockNote = "every worker stamps its messages and reckons its window on the coordinator's clock: its own less the offset " +
	"measured before the run, where that offset exceeds its uncertainty (± half the measuring round trip), else its own. " +
	"A producer on one host and a consumer on another give an e2e latency only as good as those clocks: the offsets' " +
	"uncertainty, or the clocks' own disagreement where none was applied, and their drift over the run (offset after − before), " +
	"which nothing corrected. An e2e figure near those errors says little."

func (c *coord) printf(format string, a ...any) { _, _ = fmt.Fprintf(c.o.Out, format, a...) }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
func us(d time.Duration) float64 { return float64(d) / 1e3 }

// each runs f for every worker at once and returns the first error.
func (c *coord) each(f func(*remote) error) error {
	errs := make([]error, len(c.workers))
	var wg sync.WaitGroup
	for _, r := range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r.i] = f(r)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *coord) prepare(ctx context.Context, r *remote) error {
	return c.post(ctx, r, pathPrepare, prepareRequest{Run: c.runID, Worker: r.i, Workers: len(c.workers),
		Workload: c.wire, Driver: c.o.Driver, Tag: c.tag, ClockOffsetNs: int64(r.clock.applied()),
		CreateTopics: r.i == 0, Payload: c.payload})
}

// allIn reports whether every one of ws is in phase.
func (c *coord) allIn(ws []*remote, phase string) bool {
	for _, r := range ws {
		if r.st.Phase != phase {
			return false
		}
	}
	return true
}

// caughtUp reports whether every group has had every acknowledged
// message, by the workers' counts.
func (c *coord) caughtUp() bool {
	if c.w.NoConsumers {
		return true
	}
	var acked, received int64
	for _, r := range c.workers {
		acked, received = acked+r.st.Counts.Acked, received+r.st.Counts.Received
	}
	return received >= acked*int64(c.w.ConsumerGroups)
}

// pollUntil reads ws's status every PollInterval until done holds. A
// worker that failed, lost the run, or has not answered for
// HeartbeatTimeout fails it, as does deadline passing.
func (c *coord) pollUntil(ctx context.Context, what string, deadline time.Time, ws []*remote, done func() bool) error {
	t := time.NewTicker(c.o.PollInterval)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for _, r := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var st statusResponse
				r.stErr = c.call(ctx, r, http.MethodGet, pathStatus+"?run="+c.runID, nil, &st, c.o.RequestTimeout, maxSmallResponse)
				if r.stErr == nil {
					r.st, r.lastOK = st, time.Now()
				}
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, r := range ws {
			var he *httpError
			switch {
			case errors.As(r.stErr, &he) && he.code == http.StatusNotFound:
				return fmt.Errorf("%s lost the run: %s", r, he.msg)
			case r.stErr != nil && time.Since(r.lastOK) > c.o.HeartbeatTimeout:
				return fmt.Errorf("%s stopped answering: nothing for %s (%v)", r, time.Since(r.lastOK).Round(time.Millisecond), r.stErr)
			case r.stErr == nil && r.st.Phase == phaseFailed:
				return fmt.Errorf("%s failed: %s", r, r.st.Error)
			}
		}
		if done() {
			return nil
		}
		if time.Now().After(deadline) {
			var late []string
			for _, r := range ws {
				late = append(late, fmt.Sprintf("%s (%s)", r.addr, r.st.Phase))
			}
			return fmt.Errorf("workers not %s in time: %s", what, strings.Join(late, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// stopAll tells every worker to stop the run, each within
// RequestTimeout, whatever happened to the caller's context.
func (c *coord) stopAll() {
	_ = c.each(func(r *remote) error { // best effort: a dead worker cannot hear it
		return c.call(context.Background(), r, http.MethodPost, pathStop, runRequest{Run: c.runID}, nil, c.o.RequestTimeout, maxSmallResponse)
	})
}

func (c *coord) post(ctx context.Context, r *remote, path string, body any) error {
	return c.call(ctx, r, http.MethodPost, path, body, nil, c.o.RequestTimeout, maxSmallResponse)
}

func (c *coord) fetchResult(ctx context.Context, r *remote) (*loadgen.Result, error) {
	var res loadgen.Result
	if err := c.call(ctx, r, http.MethodGet, pathResult+"?run="+c.runID, nil, &res, c.o.ResultTimeout, c.o.MaxResultBytes); err != nil {
		return nil, err
	}
	return &res, nil
}

// httpError is a worker's refusal.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.code, http.StatusText(e.code), e.msg)
}

// call makes one request to r within timeout, decoding at most limit
// bytes of its answer into out (nil: discarded). Errors name r.
func (c *coord) call(ctx context.Context, r *remote, method, path string, in, out any, timeout time.Duration, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, body)
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.o.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the limit or the end
	lr := io.LimitReader(resp.Body, limit+1)
	if resp.StatusCode != http.StatusOK {
		var e errorResponse
		b, _ := io.ReadAll(io.LimitReader(lr, maxSmallResponse)) // the refusal's text, as far as it came
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		if resp.StatusCode == http.StatusUnauthorized {
			e.Error += " (the worker refused the token)"
		}
		return fmt.Errorf("%s: %s %s: %w", r, method, path, &httpError{code: resp.StatusCode, msg: e.Error})
	}
	b, err := io.ReadAll(lr)
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w", r, method, path, err)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("%s: %s %s: answer over %d bytes", r, method, path, limit)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %s %s: %w", r, method, path, err)
	}
	return nil
}
