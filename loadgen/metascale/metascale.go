// Package metascale is the lab's metadata-scale experiment: how a broker
// and its name server bear many topics.
//
// A run creates Topics topics on an empty broker from Clients concurrent
// admin clients — one UPDATE_AND_CREATE_TOPIC a topic, or
// UPDATE_AND_CREATE_TOPIC_LIST of Batch topics — and records, every
// Window topics, the creates a second over that window, the bytes the
// broker sent the name servers per created topic (its register_bytes
// stat) and the process's RSS. Then it times Lookups route lookups of
// random topics at the name server (p50, p99), and restarts the broker on
// its data, timed until it serves again (its topic table loaded and
// registered).
//
// The cluster is a Target the caller provides (cmd/samsa's embedded name
// server and broker), so tests can drive the runner with a small one.
// The name server, the broker and the clients share this process: RSS is
// all of them.
package metascale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/protocol"
)

// Kind is the "kind" of a metadata-scale experiment file and its result.
const Kind = "metadata-scale"

// Experiment is an experiment file of kind "metadata-scale".
type Experiment struct {
	resultfile.Spec
	resultfile.Forms[Settings, *Settings]
}

// Settings are a run's parameters.
type Settings struct {
	// Topics is how many topics the run creates.
	Topics int `json:"topics"`
	// QueuesPerTopic is each topic's read and write queues; default 1.
	QueuesPerTopic int `json:"queues_per_topic,omitempty"`
	// Clients is how many admin clients create at once; default 16.
	Clients int `json:"clients,omitempty"`
	// Batch: 0 creates a topic a request (UPDATE_AND_CREATE_TOPIC); more
	// sends UPDATE_AND_CREATE_TOPIC_LIST of Batch topics.
	Batch int `json:"batch,omitempty"`
	// Window is how many topics a rate sample spans; default 10,000.
	Window int `json:"window,omitempty"`
	// Lookups is how many route lookups are timed; default 2,000.
	Lookups int `json:"lookups,omitempty"`
	// Timeout bounds the creates; default 30m.
	Timeout resultfile.Duration `json:"timeout,omitempty"`
}

// EnsureDefaults fills the zero fields with their defaults.
func (s *Settings) EnsureDefaults() {
	s.QueuesPerTopic, s.Clients = cmp.Or(s.QueuesPerTopic, 1), cmp.Or(s.Clients, 16)
	s.Window, s.Lookups = cmp.Or(s.Window, 10000), cmp.Or(s.Lookups, 2000)
	s.Timeout = cmp.Or(s.Timeout, resultfile.Duration(30*time.Minute))
}

// Validate reports every bad field at once.
func (s *Settings) Validate() error {
	var errs []error
	if s.Topics < 1 || s.Window < 1 || s.Window > s.Topics {
		errs = append(errs, fmt.Errorf("topics %d, window %d: want 1 <= window <= topics", s.Topics, s.Window))
	}
	if s.QueuesPerTopic < 1 || s.QueuesPerTopic > 1024 || s.Clients < 1 || s.Batch < 0 || s.Lookups < 1 || s.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("queues_per_topic %d (1..1024), clients %d (>= 1), batch %d (>= 0), lookups %d (>= 1), timeout (> 0)",
			s.QueuesPerTopic, s.Clients, s.Batch, s.Lookups))
	}
	return errors.Join(errs...)
}

// LoadExperiment reads and checks a metadata-scale experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	e, err := resultfile.ReadExperiment[Experiment](path, Kind)
	if err != nil {
		return nil, err
	}
	if err := resultfile.CheckForms(path, e.Settings); err != nil {
		return nil, err
	}
	return e, nil
}

// Target is the cluster a run fills with topics.
type Target interface {
	// NamesrvAddr and BrokerAddr are the name server's and the broker's
	// remoting addresses.
	NamesrvAddr() string
	BrokerAddr() string
	// RestartBroker closes the broker and starts it again on its data,
	// returning once it serves.
	RestartBroker(ctx context.Context) error
	// RSSMB is the process's resident set, MiB.
	RSSMB() float64
	// Close stops the cluster and removes its data.
	Close() error
}

// Options are a run's plumbing.
type Options struct {
	Quick     bool
	NewTarget func(ctx context.Context) (Target, error)
	Progress  io.Writer
}

// Window is one rate sample: the topics created up to Upto.
type Window struct {
	Upto             int     `json:"upto"`
	CreatesPerSec    float64 `json:"creates_per_sec"`
	RegisterBytes    float64 `json:"register_bytes_per_topic"`
	RegisterFrames   float64 `json:"register_frames"`
	FullRegistration float64 `json:"full_registrations"`
	RSSMB            float64 `json:"rss_mb"`
}

// Result is what a metadata-scale run writes under results/.
type Result struct {
	resultfile.Header
	Settings Settings `json:"settings"`
	Windows  []Window `json:"windows"`
	// FirstRate and LastRate are the first and the last window's creates
	// a second; Slowdown is FirstRate ÷ LastRate.
	FirstRate float64 `json:"first_creates_per_sec"`
	LastRate  float64 `json:"last_creates_per_sec"`
	Slowdown  float64 `json:"slowdown"`
	// CreateSeconds is the whole creation's time.
	CreateSeconds float64 `json:"create_seconds"`
	LookupP50Us   float64 `json:"lookup_p50_us"`
	LookupP99Us   float64 `json:"lookup_p99_us"`
	// RestartSeconds is the broker's close and start again, to serving.
	RestartSeconds float64 `json:"restart_seconds"`
	// Official is the official RocketMQ Go client's phase (official.go).
	Official *Official `json:"official,omitempty"`
}

// RunExperiment creates the topics, times the lookups and the restart.
func RunExperiment(ctx context.Context, e *Experiment, opts Options) (res *Result, err error) {
	s, err := e.Settings(opts.Quick)
	if err != nil {
		return nil, err
	}
	out := cmp.Or[io.Writer](opts.Progress, io.Discard)
	res = &Result{Header: e.Header(opts.Quick), Settings: s}
	t, err := opts.NewTarget(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, t.Close()) }()
	a, err := client.NewAdmin(client.ClientOptions{NameServers: []string{t.NamesrvAddr()}})
	if err != nil {
		return nil, err
	}
	defer func() { _ = a.Close() }()
	lab.Progressf(out, "%s: %d topics × %d queues from %d clients (batch %d)\n", e.Name, s.Topics, s.QueuesPerTopic, s.Clients, s.Batch)
	if err := create(ctx, a, t, s, res, out); err != nil {
		return nil, err
	}
	if err := lookups(ctx, a, s, res); err != nil {
		return nil, err
	}
	if res.Official, err = official(ctx, t, s); err != nil {
		return nil, err
	}
	lab.Progressf(out, "official client: create %.1f ms, list of %d topics %.0f ms, %d sends p50 %.1f ms\n",
		res.Official.CreateMs, res.Official.Listed, res.Official.ListMs, res.Official.Sends, res.Official.SendP50Ms)
	t0 := time.Now()
	if err := t.RestartBroker(ctx); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	res.RestartSeconds = time.Since(t0).Seconds()
	// A topic routes after the restart (the broker registered its table).
	if _, err := a.Route(ctx, topicName(s.Topics-1)); err != nil {
		return nil, fmt.Errorf("after the restart: %w", err)
	}
	lab.Progressf(out, "lookup p50 %.0f µs p99 %.0f µs; broker restart %.2f s\n", res.LookupP50Us, res.LookupP99Us, res.RestartSeconds)
	return res, nil
}

func topicName(i int) string { return fmt.Sprintf("ms-%07d", i) }

// brokerStat reads one of the broker's text stats as a number.
func brokerStat(ctx context.Context, a *client.Admin, addr string, names ...string) ([]float64, error) {
	st, err := a.BrokerStats(ctx, addr)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(names))
	for i, n := range names {
		for _, s := range st {
			if s.Name == n {
				_, _ = fmt.Sscan(s.Value, &out[i])
			}
		}
	}
	return out, nil
}

// create makes the topics, a window at a time.
func create(ctx context.Context, a *client.Admin, t Target, s Settings, res *Result, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(s.Timeout))
	defer cancel()
	stats := []string{"register_bytes", "register_frames", "register_full"}
	prev, err := brokerStat(ctx, a, t.BrokerAddr(), stats...)
	if err != nil {
		return err
	}
	q := int32(s.QueuesPerTopic)
	tc := func(i int) protocol.TopicConfig {
		return protocol.TopicConfig{TopicName: topicName(i), ReadQueueNums: q, WriteQueueNums: q, Perm: protocol.PermRead | protocol.PermWrite}
	}
	step := max(s.Batch, 1)
	start := time.Now()
	for from := 0; from < s.Topics; from += s.Window {
		upto := min(from+s.Window, s.Topics)
		var next atomic.Int64
		next.Store(int64(from))
		var wg sync.WaitGroup
		errs := make([]error, s.Clients)
		t0 := time.Now()
		for c := range s.Clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(int64(step))) - step
					if i >= upto || ctx.Err() != nil {
						return
					}
					var err error
					if s.Batch == 0 {
						err = a.CreateTopicAt(ctx, t.BrokerAddr(), tc(i))
					} else {
						batch := make([]protocol.TopicConfig, 0, step)
						for j := i; j < min(i+step, upto); j++ {
							batch = append(batch, tc(j))
						}
						_, err = a.CreateTopics(ctx, batch, client.TopicSpec{Brokers: []string{t.BrokerAddr()}, Force: true})
					}
					if err != nil {
						errs[c] = err
						cancel()
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		secs := time.Since(t0).Seconds()
		now, err := brokerStat(ctx, a, t.BrokerAddr(), stats...)
		if err != nil {
			return err
		}
		n := float64(upto - from)
		w := Window{Upto: upto, CreatesPerSec: n / secs, RegisterBytes: (now[0] - prev[0]) / n,
			RegisterFrames: now[1] - prev[1], FullRegistration: now[2] - prev[2], RSSMB: t.RSSMB()}
		prev = now
		res.Windows = append(res.Windows, w)
		lab.Progressf(out, "  %d topics: %.0f creates/s, %.0f registration bytes a topic, %.0f frames, %.0f full registrations, RSS %.0f MiB\n",
			upto, w.CreatesPerSec, w.RegisterBytes, w.RegisterFrames, w.FullRegistration, w.RSSMB)
	}
	res.CreateSeconds = time.Since(start).Seconds()
	res.FirstRate, res.LastRate = res.Windows[0].CreatesPerSec, res.Windows[len(res.Windows)-1].CreatesPerSec
	if res.LastRate > 0 {
		res.Slowdown = res.FirstRate / res.LastRate
	}
	return nil
}

// lookups times route lookups of random topics, one at a time.
func lookups(ctx context.Context, a *client.Admin, s Settings, res *Result) error {
	rng := rand.New(rand.NewSource(1))
	us := make([]float64, s.Lookups)
	for i := range us {
		t0 := time.Now()
		if _, err := a.Route(ctx, topicName(rng.Intn(s.Topics))); err != nil {
			return fmt.Errorf("route lookup: %w", err)
		}
		us[i] = float64(time.Since(t0).Microseconds())
	}
	slices.Sort(us)
	res.LookupP50Us, res.LookupP99Us = us[len(us)/2], us[min(len(us)-1, len(us)*99/100)]
	return nil
}

// WriteResult writes res as results/<experiment>/<host>-<UTC time>.json
// under dir and returns the path.
func WriteResult(dir string, res *Result) (string, error) {
	return res.Header.WriteResult(dir, res)
}

// Verdict: the target for creates, the last window no more than
// 2× slower than the first.
func (r *Result) Verdict() lab.Verdict {
	if r.Slowdown > 2 {
		return lab.Verdict{Err: fmt.Errorf("metadata-scale: the last window's creates are %.1f× slower than the first's (target ≤ 2×)", r.Slowdown)}
	}
	return lab.Verdict{}
}

// Markdown renders the result: a row a window, then the lookups and the
// restart.
func (r *Result) Markdown() string {
	var b strings.Builder
	r.Heading(&b)
	how := "one UPDATE_AND_CREATE_TOPIC a topic"
	if r.Settings.Batch > 0 {
		how = fmt.Sprintf("UPDATE_AND_CREATE_TOPIC_LIST of %d topics", r.Settings.Batch)
	}
	fmt.Fprintf(&b, "Run %s: %d topics × %d queues created by %d clients, %s; the name server, the broker and the clients share one process (RSS is all of them).\n\n",
		r.Start.Format("2006-01-02 15:04 UTC"), r.Settings.Topics, r.Settings.QueuesPerTopic, r.Settings.Clients, how)
	b.WriteString("| topics | creates/s | registration bytes a topic | registration frames | full registrations | RSS MiB |\n|---|---|---|---|---|---|\n")
	for _, w := range r.Windows {
		fmt.Fprintf(&b, "| %d | %.0f | %.0f | %.0f | %.0f | %.0f |\n", w.Upto, w.CreatesPerSec, w.RegisterBytes, w.RegisterFrames, w.FullRegistration, w.RSSMB)
	}
	fmt.Fprintf(&b, "\n| figure | measured |\n|---|---|\n| creates/s, first window → last | %.0f → %.0f (%.2f× slower) |\n| all creates | %.1f s |\n| route lookup p50 / p99 | %.0f / %.0f µs |\n| broker restart to serving | %.2f s |\n",
		r.FirstRate, r.LastRate, r.Slowdown, r.CreateSeconds, r.LookupP50Us, r.LookupP99Us, r.RestartSeconds)
	if o := r.Official; o != nil {
		fmt.Fprintf(&b, "| official Go client: create one more topic | %.1f ms |\n| official Go client: list every topic | %d topics in %.0f ms |\n| official Go client: sends to %d topics (routed each) | p50 %.1f ms, max %.1f ms |\n",
			o.CreateMs, o.Listed, o.ListMs, o.Sends, o.SendP50Ms, o.SendMaxMs)
	}
	return b.String()
}
