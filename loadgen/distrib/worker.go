package distrib

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/loadgen"
)

// DriverFactory makes the driver a run's spec names.
type DriverFactory func(ctx context.Context, spec DriverSpec) (loadgen.Driver, error)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Token is the secret a coordinator must present (Authorization:
	// Bearer); at least MinTokenBytes. Required.
	Token string
	// Driver makes each run's driver. Required.
	Driver DriverFactory
	// Out gets the runs' progress lines and summaries; default io.Discard.
	Out io.Writer
	// Logf, if set, gets the worker's own events: runs begun and ended,
	// requests refused.
	Logf func(format string, a ...any)
	// Lease: a run whose coordinator has not been heard from for this
	// long is stopped (a coordinator polls every fraction of a second);
	// default 30s.
	Lease time.Duration
	// Host is the name the worker reports; default os.Hostname.
	Host string
}

// Worker runs shares of distributed runs on a coordinator's command. It
// is an http.Handler; Serve runs it on a listener. It runs one run at a
// time. Its methods are safe for concurrent use.
type Worker struct {
	o         WorkerOptions
	tokenHash [sha256.Size]byte
	mu        struct {
		sync.Mutex
		run    *workerRun // the current or last run; nil before the first
		closed bool
	}
}

// workerRun is one run's state. Its goroutine (runShare) owns the driver
// and loadgen.Run; the handlers hand it the start and the drained word
// through its channels; phase, err and result are under Worker.mu.
type workerRun struct {
	id       string
	part     *loadgen.Part
	cancel   context.CancelCauseFunc
	done     chan struct{}  // closed when runShare returns
	start    chan time.Time // the start command (buffered: one)
	drained  chan bool      // the drained command (buffered: one)
	lastSeen atomic.Int64   // Unix ns of the coordinator's last request naming this run
	phase    string
	err      error
	result   []byte // JSON, when done
}

// NewWorker checks o and returns a worker.
func NewWorker(o WorkerOptions) (*Worker, error) {
	if err := CheckToken(o.Token); err != nil {
		return nil, err
	}
	if o.Driver == nil {
		return nil, errors.New("distrib: a worker needs a driver factory")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname() // a label only
	}
	return &Worker{o: o, tokenHash: sha256.Sum256([]byte(o.Token))}, nil
}

func (w *Worker) logf(format string, a ...any) {
	if w.o.Logf != nil {
		w.o.Logf(format, a...)
	}
}

// Serve answers coordinators on l until ctx ends, then closes the
// listener, stops a run in progress and returns. Every request's header
// and body are bounded in size and time.
func (w *Worker) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 5 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	var err error
	select {
	case <-ctx.Done():
		err = srv.Close()
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	case err = <-errc:
	}
	return errors.Join(err, w.Close())
}

// Close stops a run in progress, waits for it to end and refuses every
// later prepare.
func (w *Worker) Close() error {
	w.mu.Lock()
	w.mu.closed = true
	wr := w.mu.run
	w.mu.Unlock()
	if wr != nil {
		wr.cancel(errors.New("the worker is closing"))
		<-wr.done
	}
	return nil
}

// ServeHTTP answers one request: the token first, and nothing else is
// read or done without it.
func (w *Worker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if !tokenOK(r, w.tokenHash) {
		w.logf("loadgen worker: refused %s %s from %s: no or wrong token", r.Method, r.URL.Path, r.RemoteAddr)
		rw.Header().Set("WWW-Authenticate", `Bearer realm="samsa loadgen"`)
		reply(rw, http.StatusUnauthorized, errorResponse{Error: "no or wrong token"})
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, maxRequestBody)
	type route struct {
		method string
		h      func(*http.Request) (int, any)
	}
	routes := map[string]route{
		pathClock:   {http.MethodGet, w.clock},
		pathPrepare: {http.MethodPost, w.prepare},
		pathStart:   {http.MethodPost, w.startRun},
		pathStatus:  {http.MethodGet, w.status},
		pathDrained: {http.MethodPost, w.drain},
		pathResult:  {http.MethodGet, nil}, // writes its own answer
		pathStop:    {http.MethodPost, w.stop},
	}
	rt, ok := routes[r.URL.Path]
	switch {
	case !ok:
		reply(rw, http.StatusNotFound, errorResponse{Error: "no such endpoint"})
	case r.Method != rt.method:
		reply(rw, http.StatusMethodNotAllowed, errorResponse{Error: r.URL.Path + " takes " + rt.method})
	case rt.h == nil:
		w.result(rw, r)
	default:
		code, body := rt.h(r)
		reply(rw, code, body)
	}
}

// reply writes body as JSON with code; a failed write is the
// coordinator's to notice.
func reply(rw http.ResponseWriter, code int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_, _ = rw.Write(append(b, '\n'))
}

func refuse(code int, format string, a ...any) (int, any) {
	return code, errorResponse{Error: fmt.Sprintf(format, a...)}
}

// decode reads r's JSON body into v, refusing unknown fields (a
// coordinator of another version) and trailing data.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad request body: %w", err)
	}
	if dec.More() {
		return errors.New("bad request body: more than one value")
	}
	return nil
}

func (w *Worker) clock(*http.Request) (int, any) {
	return http.StatusOK, clockResponse{NowNs: time.Now().UnixNano()}
}

// lookup is the run named id, its lease renewed, or a refusal.
func (w *Worker) lookup(id string) (*workerRun, int, any) {
	w.mu.Lock()
	wr := w.mu.run
	w.mu.Unlock()
	if wr == nil || wr.id != id {
		code, body := refuse(http.StatusNotFound, "no run %q here (the worker restarted, or another coordinator took it)", id)
		return nil, code, body
	}
	wr.lastSeen.Store(time.Now().UnixNano())
	return wr, 0, nil
}

func (w *Worker) prepare(r *http.Request) (int, any) {
	var req prepareRequest
	if err := decode(r, &req); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	if err := checkRunID(req.Run); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	if req.Workers < 1 || req.Workers > maxWorkers || req.Worker < 0 || req.Worker >= req.Workers {
		return refuse(http.StatusBadRequest, "worker %d of %d: want 0 <= worker < workers <= %d", req.Worker, req.Workers, maxWorkers)
	}
	if err := checkWorkload(&req.Workload, req.Payload); err != nil {
		return refuse(http.StatusBadRequest, "workload: %v", err)
	}
	producers, consumers := loadgen.Split(&req.Workload, req.Workers)
	wr := &workerRun{id: req.Run, done: make(chan struct{}), start: make(chan time.Time, 1),
		drained: make(chan bool, 1), phase: phasePreparing}
	wr.part = &loadgen.Part{Tag: req.Tag, Producers: producers[req.Worker], Consumers: consumers[req.Worker],
		CreateTopics: req.CreateTopics, ClockOffset: time.Duration(req.ClockOffsetNs), Payload: req.Payload,
		Ready: wr.ready(w), Drained: wr.waitDrained(w)}
	wr.lastSeen.Store(time.Now().UnixNano())
	ctx, cancel := context.WithCancelCause(context.Background())
	wr.cancel = cancel

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.closed {
		cancel(nil)
		return refuse(http.StatusServiceUnavailable, "the worker is closing")
	}
	if cur := w.mu.run; cur != nil && cur.phase != phaseDone && cur.phase != phaseFailed {
		cancel(nil)
		return refuse(http.StatusConflict, "busy with run %q (%s)", cur.id, cur.phase)
	}
	w.mu.run = wr
	w.logf("loadgen worker: run %s: worker %d of %d, %d producers, %d consumers, %s driver",
		req.Run, req.Worker, req.Workers, len(wr.part.Producers), len(wr.part.Consumers), req.Driver.Driver)
	go w.runShare(ctx, wr, req)
	go w.watchLease(ctx, wr)
	return http.StatusOK, struct{}{}
}

// runShare runs the share; it owns the driver.
func (w *Worker) runShare(ctx context.Context, wr *workerRun, req prepareRequest) {
	defer close(wr.done)
	defer wr.cancel(nil)
	var res *loadgen.Result
	d, err := w.o.Driver(ctx, req.Driver)
	if err != nil {
		err = fmt.Errorf("driver %s: %w", req.Driver.Driver, err)
	} else {
		res, err = loadgen.Run(ctx, d, req.Workload, loadgen.Options{Out: w.o.Out, Part: wr.part})
		if cerr := d.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close the %s driver: %w", req.Driver.Driver, cerr))
		}
	}
	if err != nil && context.Cause(ctx) != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
	}
	var b []byte
	if err == nil {
		b, err = json.Marshal(res)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		wr.phase, wr.err = phaseFailed, err
		w.logf("loadgen worker: run %s failed: %v", wr.id, err)
		return
	}
	wr.phase, wr.result = phaseDone, b
	w.logf("loadgen worker: run %s done: %d acknowledged, %d received", wr.id, res.Acked, res.Received)
}

// watchLease stops the run when its coordinator is not heard from for
// the lease: a run never outlives its coordinator by more.
func (w *Worker) watchLease(ctx context.Context, wr *workerRun) {
	t := time.NewTicker(w.o.Lease / 8)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if silent := time.Since(time.Unix(0, wr.lastSeen.Load())); silent > w.o.Lease {
				wr.cancel(fmt.Errorf("the coordinator was not heard from for %s", silent.Round(time.Second)))
				return
			}
		}
	}
}

// setPhase moves the run to phase.
func (w *Worker) setPhase(wr *workerRun, phase string) {
	w.mu.Lock()
	wr.phase = phase
	w.mu.Unlock()
}

// ready is the share's Ready: it waits for the start command.
func (wr *workerRun) ready(w *Worker) func(context.Context) (time.Time, error) {
	return func(ctx context.Context) (time.Time, error) {
		w.setPhase(wr, phaseReady)
		select {
		case at := <-wr.start:
			w.setPhase(wr, phaseRunning)
			return at, nil
		case <-ctx.Done():
			return time.Time{}, context.Cause(ctx)
		}
	}
}

// waitDrained is the share's Drained: it waits for the drained command.
func (wr *workerRun) waitDrained(w *Worker) func(context.Context) bool {
	return func(ctx context.Context) bool {
		w.setPhase(wr, phaseDraining)
		select {
		case ok := <-wr.drained:
			return ok
		case <-ctx.Done():
			return false
		}
	}
}

// namedRun decodes a request that names a run into req (a pointer) and
// finds that run, its lease renewed, or answers with a refusal.
func (w *Worker) namedRun(r *http.Request, req interface{ runID() string }) (*workerRun, int, any) {
	if err := decode(r, req); err != nil {
		code, body := refuse(http.StatusBadRequest, "%v", err)
		return nil, code, body
	}
	return w.lookup(req.runID())
}

// inPhase is namedRun for a run that must be in phase want: it returns
// with w.mu held (the caller unlocks), or with a refusal and no lock.
func (w *Worker) inPhase(r *http.Request, req interface{ runID() string }, want string) (*workerRun, int, any) {
	wr, code, body := w.namedRun(r, req)
	if wr == nil {
		return nil, code, body
	}
	w.mu.Lock()
	if wr.phase != want {
		w.mu.Unlock()
		code, body := refuse(http.StatusConflict, "run %q is %s, not %s", wr.id, wr.phase, want)
		return nil, code, body
	}
	return wr, 0, nil
}

func (w *Worker) startRun(r *http.Request) (int, any) {
	var req startRequest
	wr, code, body := w.inPhase(r, &req, phaseReady)
	if wr == nil {
		return code, body
	}
	defer w.mu.Unlock()
	select {
	case wr.start <- time.Unix(0, req.StartNs):
	default:
		return refuse(http.StatusConflict, "run %q was started already", wr.id)
	}
	return http.StatusOK, struct{}{}
}

func (w *Worker) drain(r *http.Request) (int, any) {
	var req drainedRequest
	wr, code, body := w.inPhase(r, &req, phaseDraining)
	if wr == nil {
		return code, body
	}
	defer w.mu.Unlock()
	select {
	case wr.drained <- req.CaughtUp:
	default: // said already
	}
	return http.StatusOK, struct{}{}
}

func (w *Worker) status(r *http.Request) (int, any) {
	wr, code, body := w.lookup(r.URL.Query().Get("run"))
	if wr == nil {
		return code, body
	}
	w.mu.Lock()
	st := statusResponse{Run: wr.id, Phase: wr.phase, Host: w.o.Host}
	if wr.err != nil {
		st.Error = wr.err.Error()
	}
	w.mu.Unlock()
	st.Counts = wr.part.Counts()
	return http.StatusOK, st
}

func (w *Worker) result(rw http.ResponseWriter, r *http.Request) {
	wr, code, body := w.lookup(r.URL.Query().Get("run"))
	if wr == nil {
		reply(rw, code, body)
		return
	}
	w.mu.Lock()
	phase, b, err := wr.phase, wr.result, wr.err
	w.mu.Unlock()
	switch phase {
	case phaseDone:
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write(b)
	case phaseFailed:
		reply(rw, http.StatusConflict, errorResponse{Error: fmt.Sprintf("run %q failed: %v", wr.id, err)})
	default:
		reply(rw, http.StatusConflict, errorResponse{Error: fmt.Sprintf("run %q is %s, not done", wr.id, phase)})
	}
}

func (w *Worker) stop(r *http.Request) (int, any) {
	var req runRequest
	wr, code, body := w.namedRun(r, &req)
	if wr == nil {
		return code, body
	}
	wr.cancel(errors.New("stopped by the coordinator"))
	w.logf("loadgen worker: run %s stopped by the coordinator", wr.id)
	return http.StatusOK, struct{}{}
}
