// Package popchurn is the lab's pop-vs-push experiment: a consumer group
// of real processes (samsa consume, with --pop or without) on one topic,
// grown from one member to many and then churned — members join, leave
// (SIGTERM) or are stopped (SIGSTOP, continued later) every few seconds —
// while a producer in this process sends at a fixed rate.
//
// It measures, per mode: the rate the group delivers at each size;
// duplicates (deliveries past the first of a message) and losses (sends
// acknowledged and never delivered once the run drains); how long a
// message sent during the churn waits until it is first delivered (its
// tail is the time a message sits in a stopped member's hands, or in its
// queues, while other members are idle); and, for each stop, how soon
// another member gets what the stopped one held.
//
// Members print each message as a JSON line (samsa consume --json); this
// process reads the lines as they come and stamps them, so every time is
// taken on one clock. A message's body is its sequence number and send
// time.
package popchurn

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

// Kind is the "kind" of a pop-vs-push experiment file and its result.
const Kind = "pop-vs-push"

// Experiment is an experiment file of kind "pop-vs-push".
type Experiment struct {
	resultfile.Spec
	resultfile.Forms[Settings, *Settings]
}

// Settings are a run's parameters.
type Settings struct {
	// Modes are the consumption modes run one after the other, each on a
	// fresh cluster: "pop", "push". Default both.
	Modes []string `json:"modes,omitempty"`
	// Queues is the topic's queue count; default 8.
	Queues int `json:"queues,omitempty"`
	// Steps are the group's sizes before the churn; default 1, 8, 64.
	Steps []int `json:"consumer_steps,omitempty"`
	// StepTime is how long each size runs (its rate is measured over
	// it); default 8 s.
	StepTime resultfile.Duration `json:"step_time,omitempty"`
	// Rate is the producer's messages a second; default 1,000.
	Rate int `json:"rate,omitempty"`
	// Churn is how long the churn runs, an event every ChurnEvery;
	// defaults 30 s and 2 s. A stopped member is continued after StopFor
	// (default 10 s).
	Churn      resultfile.Duration `json:"churn,omitempty"`
	ChurnEvery resultfile.Duration `json:"churn_every,omitempty"`
	StopFor    resultfile.Duration `json:"stop_for,omitempty"`
	// Invisible is the POP members' invisible time; default 5 s.
	Invisible resultfile.Duration `json:"invisible,omitempty"`
	// Drain bounds the wait for every message once the producer stops;
	// default 3 m (a push member stopped at the end holds its queues).
	Drain resultfile.Duration `json:"drain,omitempty"`
	// Seed seeds the churn's events (0: the clock; the result records it).
	Seed uint64 `json:"seed,omitempty"`
}

// EnsureDefaults fills the zero fields with their defaults.
func (s *Settings) EnsureDefaults() {
	if len(s.Modes) == 0 {
		s.Modes = []string{"pop", "push"}
	}
	if len(s.Steps) == 0 {
		s.Steps = []int{1, 8, 64}
	}
	s.Queues, s.Rate = cmp.Or(s.Queues, 8), cmp.Or(s.Rate, 1000)
	s.StepTime = cmp.Or(s.StepTime, resultfile.Duration(8*time.Second))
	s.Churn = cmp.Or(s.Churn, resultfile.Duration(30*time.Second))
	s.ChurnEvery = cmp.Or(s.ChurnEvery, resultfile.Duration(2*time.Second))
	s.StopFor = cmp.Or(s.StopFor, resultfile.Duration(10*time.Second))
	s.Invisible = cmp.Or(s.Invisible, resultfile.Duration(5*time.Second))
	s.Drain = cmp.Or(s.Drain, resultfile.Duration(3*time.Minute))
}

// Validate reports every bad field at once.
func (s *Settings) Validate() error {
	var errs []error
	for _, m := range s.Modes {
		if m != "pop" && m != "push" {
			errs = append(errs, fmt.Errorf("mode %q: want pop or push", m))
		}
	}
	for _, n := range s.Steps {
		if n < 1 || n > 256 {
			errs = append(errs, fmt.Errorf("consumer step %d: want 1 to 256", n))
		}
	}
	if s.Queues < 1 || s.Rate < 1 || s.StepTime <= 0 || s.Churn < 0 || s.ChurnEvery <= 0 || s.StopFor <= 0 || s.Drain <= 0 {
		errs = append(errs, errors.New("queues and rate >= 1; step_time, churn_every, stop_for and drain > 0; churn >= 0"))
	}
	if s.Invisible < resultfile.Duration(time.Second) {
		errs = append(errs, errors.New("invisible: at least 1s (samsa consume --pop's least)"))
	}
	return errors.Join(errs...)
}

// LoadExperiment reads and checks a pop-vs-push experiment file.
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

// Target is the cluster of one mode's run.
type Target interface {
	NamesrvAddr() string
	// Close stops the cluster and removes its data.
	Close() error
}

// Options are a run's plumbing.
type Options struct {
	Quick bool
	Seed  uint64
	// Binary is the samsa binary the members run.
	Binary    string
	NewTarget func(ctx context.Context) (Target, error)
	Progress  io.Writer
}

// Step is one group size's delivery rate.
type Step struct {
	Consumers int     `json:"consumers"`
	MsgsPerS  float64 `json:"delivered_per_sec"`
}

// Mode is one mode's figures.
type Mode struct {
	Mode  string `json:"mode"`
	Steps []Step `json:"steps"`
	// Events counts the churn's joins, leaves and stops.
	Events map[string]int `json:"events"`
	// Sent is what the producer's sends were acknowledged for;
	// Delivered the distinct messages delivered, Duplicates the
	// deliveries past each message's first, Lost those sent and never
	// delivered by the end of the drain.
	Sent       int `json:"sent"`
	Delivered  int `json:"delivered"`
	Duplicates int `json:"duplicates"`
	Lost       int `json:"lost"`
	// Waits of the messages sent during the churn, send to first
	// delivery (ms).
	WaitP50Ms float64 `json:"wait_p50_ms"`
	WaitP99Ms float64 `json:"wait_p99_ms"`
	WaitMaxMs float64 `json:"wait_max_ms"`
	// Redelivery: per stop, ms until another member got a message the
	// stopped one held (printed before the stop, or handed out again);
	// Unseen counts the stops after which none was seen.
	RedeliveryP50Ms  float64 `json:"redelivery_p50_ms"`
	RedeliveryMaxMs  float64 `json:"redelivery_max_ms"`
	RedeliveryUnseen int     `json:"redelivery_unseen"`
}

// Result is what a pop-vs-push run writes under results/.
type Result struct {
	resultfile.Header
	Settings Settings `json:"settings"`
	Seed     uint64   `json:"seed"`
	Modes    []Mode   `json:"modes"`
}

// RunExperiment runs each mode on a fresh cluster.
func RunExperiment(ctx context.Context, e *Experiment, opts Options) (*Result, error) {
	s, err := e.Settings(opts.Quick)
	if err != nil {
		return nil, err
	}
	if opts.Binary == "" {
		return nil, errors.New("pop-vs-push: no samsa binary for the members")
	}
	seed := cmp.Or(opts.Seed, s.Seed, uint64(time.Now().UnixNano()))
	res := &Result{Header: e.Header(opts.Quick), Settings: s, Seed: seed}
	out := cmp.Or[io.Writer](opts.Progress, io.Discard)
	for i, m := range s.Modes {
		lab.Progressf(out, "%s: %s, seed %d\n", e.Name, m, seed)
		r, err := runMode(ctx, m, s, seed+uint64(i), opts, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		res.Modes = append(res.Modes, *r)
	}
	return res, nil
}

// delivery is one message printed by one member.
type delivery struct {
	member, seq int
	times       int
	at          time.Time
}

// run is one mode's state.
type run struct {
	mode   string
	s      Settings
	bin    string
	ns     string
	mu     sync.Mutex
	sentAt map[int]time.Time // acknowledged sends
	first  map[int]delivery
	all    []delivery
	wg     sync.WaitGroup
}

// member is one samsa consume process.
type member struct {
	id      int
	cmd     *exec.Cmd
	stopped bool
	done    chan struct{}
}

func (r *run) start(id int, topic, group string) (*member, error) {
	args := []string{"consume", "-n", r.ns, "--topic", topic, "--group", group, "--from", "earliest", "--json"}
	if r.mode == "pop" {
		args = append(args, "--pop", "--invisible", time.Duration(r.s.Invisible).String())
	}
	cmd := exec.Command(r.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &member{id: id, cmd: cmd, done: make(chan struct{})}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(m.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct {
				Body  string `json:"body"`
				Times int    `json:"reconsumeTimes"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			seq, err := strconv.Atoi(strings.Fields(line.Body + " x")[0])
			if err != nil {
				continue
			}
			d := delivery{member: id, seq: seq, times: line.Times, at: time.Now()}
			r.mu.Lock()
			if _, ok := r.first[seq]; !ok {
				r.first[seq] = d
			}
			r.all = append(r.all, d)
			r.mu.Unlock()
		}
		_ = cmd.Wait() // its exit status says nothing the deliveries do not
	}()
	return m, nil
}

// signal sends sig to the member.
func (m *member) signal(sig syscall.Signal) {
	_ = m.cmd.Process.Signal(sig) // a member already gone has nothing to stop
}

func (m *member) leave() {
	if m.stopped {
		m.signal(syscall.SIGCONT)
	}
	m.signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		m.signal(syscall.SIGKILL)
		<-m.done
	}
}

func runMode(ctx context.Context, mode string, s Settings, seed uint64, opts Options, out io.Writer) (res *Mode, err error) {
	t, err := opts.NewTarget(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, t.Close()) }()
	r := &run{mode: mode, s: s, bin: opts.Binary, ns: t.NamesrvAddr(), sentAt: map[int]time.Time{}, first: map[int]delivery{}}
	const topic, group = "pop-vs-push", "pop-vs-push-group"
	co := client.ClientOptions{NameServers: []string{r.ns}}
	a, err := client.NewAdmin(co)
	if err != nil {
		return nil, err
	}
	defer func() { _ = a.Close() }()
	if err := a.CreateTopic(ctx, topic, client.TopicOptions{Queues: s.Queues}); err != nil {
		return nil, err
	}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: co})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	res = &Mode{Mode: mode, Events: map[string]int{}}
	var members []*member
	defer func() {
		for _, m := range members {
			m.leave()
		}
		r.wg.Wait()
	}()
	// the producer, paced every 10 ms
	pctx, stopProducing := context.WithCancel(ctx)
	var produced sync.WaitGroup
	defer func() {
		stopProducing()
		produced.Wait()
	}()
	produced.Add(1)
	go func() {
		defer produced.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		seq, start := 0, time.Now()
		for pctx.Err() == nil {
			<-tick.C
			due := int(time.Since(start).Seconds() * float64(s.Rate))
			for ; seq < due && pctx.Err() == nil; seq++ {
				at := time.Now()
				body := fmt.Sprintf("%d %d", seq, at.UnixNano())
				seq := seq
				p.SendAsync(pctx, &client.Message{Topic: topic, Body: []byte(body)}, func(_ *client.SendResult, err error) {
					if err == nil {
						r.mu.Lock()
						r.sentAt[seq] = at
						r.mu.Unlock()
					}
				})
			}
		}
	}()
	next := 0
	join := func() error {
		m, err := r.start(next, topic, group)
		if err != nil {
			return err
		}
		next++
		members = append(members, m)
		return nil
	}
	delivered := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.first)
	}
	for _, n := range s.Steps {
		for len(members) < n {
			if err := join(); err != nil {
				return nil, err
			}
		}
		d0, t0 := delivered(), time.Now()
		if err := lab.Sleep(ctx, time.Duration(s.StepTime)); err != nil {
			return nil, err
		}
		st := Step{Consumers: n, MsgsPerS: float64(delivered()-d0) / time.Since(t0).Seconds()}
		res.Steps = append(res.Steps, st)
		lab.Progressf(out, "  %d consumers: %.0f delivered/s\n", n, st.MsgsPerS)
	}
	// churn
	rng := rand.New(rand.NewPCG(seed, 0))
	type stop struct {
		member int
		at     time.Time
	}
	var stops []stop
	resume := map[*member]time.Time{}
	churnStart := time.Now()
	maxMembers := max(slices.Max(s.Steps), 1)
	for end := churnStart.Add(time.Duration(s.Churn)); time.Now().Before(end); {
		if err := lab.Sleep(ctx, time.Duration(s.ChurnEvery)); err != nil {
			return nil, err
		}
		for m, at := range resume {
			if time.Now().After(at) {
				m.signal(syscall.SIGCONT)
				m.stopped = false
				delete(resume, m)
			}
		}
		var running []*member
		for _, m := range members {
			if !m.stopped {
				running = append(running, m)
			}
		}
		switch k := rng.IntN(3); {
		case k == 0 && len(members) < maxMembers || len(running) < 2:
			if err := join(); err != nil {
				return nil, err
			}
			res.Events["join"]++
		case k == 1:
			m := running[rng.IntN(len(running))]
			m.leave()
			members = slices.DeleteFunc(members, func(x *member) bool { return x == m })
			res.Events["leave"]++
		default:
			m := running[rng.IntN(len(running))]
			m.signal(syscall.SIGSTOP)
			m.stopped = true
			resume[m] = time.Now().Add(time.Duration(s.StopFor))
			stops = append(stops, stop{member: m.id, at: time.Now()})
			res.Events["stop"]++
		}
	}
	churnEnd := time.Now()
	stopProducing()
	produced.Wait()
	for m := range resume {
		m.signal(syscall.SIGCONT)
		m.stopped = false
	}
	lab.Progressf(out, "  churn: %v\n", res.Events)
	// drain
	for end := time.Now().Add(time.Duration(s.Drain)); time.Now().Before(end); {
		r.mu.Lock()
		missing := 0
		for seq := range r.sentAt {
			if _, ok := r.first[seq]; !ok {
				missing++
			}
		}
		r.mu.Unlock()
		if missing == 0 {
			break
		}
		if err := lab.Sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Sent, res.Delivered, res.Duplicates = len(r.sentAt), len(r.first), len(r.all)-len(r.first)
	var waits []float64
	for seq, at := range r.sentAt {
		d, ok := r.first[seq]
		if !ok {
			res.Lost++
			continue
		}
		if !at.Before(churnStart) && at.Before(churnEnd) {
			waits = append(waits, float64(d.at.Sub(at).Microseconds())/1e3)
		}
	}
	res.WaitP50Ms, res.WaitP99Ms, res.WaitMaxMs = quantile(waits, 0.5), quantile(waits, 0.99), quantile(waits, 1)
	var redeliveries []float64
	for _, st := range stops {
		best := -1.0
		for _, d := range r.all {
			if !d.at.After(st.at) || d.member == st.member {
				continue
			}
			f := r.first[d.seq]
			held := f.member == st.member && f.at.Before(st.at) || d.times > 0 && f.at.Equal(d.at) && f.member == d.member
			if held {
				best = float64(d.at.Sub(st.at).Microseconds()) / 1e3
				break
			}
		}
		if best < 0 {
			res.RedeliveryUnseen++
			continue
		}
		redeliveries = append(redeliveries, best)
	}
	res.RedeliveryP50Ms, res.RedeliveryMaxMs = quantile(redeliveries, 0.5), quantile(redeliveries, 1)
	lab.Progressf(out, "  sent %d, delivered %d, %d duplicates, %d lost; churn waits p50 %.0f ms p99 %.0f ms max %.0f ms; redelivery after a stop p50 %.0f ms max %.0f ms (%d unseen)\n",
		res.Sent, res.Delivered, res.Duplicates, res.Lost, res.WaitP50Ms, res.WaitP99Ms, res.WaitMaxMs,
		res.RedeliveryP50Ms, res.RedeliveryMaxMs, res.RedeliveryUnseen)
	return res, nil
}

// quantile is q of v (0 when empty); v is sorted in place.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[min(len(v)-1, int(q*float64(len(v))))]
}

// Verdict: a lost message is a failure; the rest are figures.
func (r *Result) Verdict() lab.Verdict {
	for _, m := range r.Modes {
		if m.Lost > 0 {
			return lab.Verdict{Err: fmt.Errorf("pop-vs-push: %s lost %d of %d acknowledged sends", m.Mode, m.Lost, m.Sent), Always: true}
		}
	}
	return lab.Verdict{}
}

// Markdown renders a table of the group sizes' rates and one of the
// churn's figures, a column a mode.
func (r *Result) Markdown() string {
	var b strings.Builder
	r.Heading(&b)
	s := r.Settings
	fmt.Fprintf(&b, "Run %s (seed %d): one topic of %d queues, %d msg/s sent; members are samsa consume processes; churn %v, an event every %v (join, leave by SIGTERM, or SIGSTOP continued after %v); POP's invisible time %v.\n\n",
		r.Start.Format("2006-01-02 15:04 UTC"), r.Seed, s.Queues, s.Rate, time.Duration(s.Churn), time.Duration(s.ChurnEvery),
		time.Duration(s.StopFor), time.Duration(s.Invisible))
	b.WriteString("| figure |")
	for _, m := range r.Modes {
		fmt.Fprintf(&b, " %s |", m.Mode)
	}
	b.WriteString("\n|---|")
	for range r.Modes {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	rowf := func(name string, f func(m Mode) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, m := range r.Modes {
			fmt.Fprintf(&b, " %s |", f(m))
		}
		b.WriteString("\n")
	}
	for i, n := range s.Steps {
		rowf(fmt.Sprintf("delivered/s, %d consumers", n), func(m Mode) string {
			if i < len(m.Steps) {
				return fmt.Sprintf("%.0f", m.Steps[i].MsgsPerS)
			}
			return "-"
		})
	}
	rowf("churn events", func(m Mode) string {
		return fmt.Sprintf("%d joins, %d leaves, %d stops", m.Events["join"], m.Events["leave"], m.Events["stop"])
	})
	rowf("sent / delivered / lost", func(m Mode) string { return fmt.Sprintf("%d / %d / %d", m.Sent, m.Delivered, m.Lost) })
	rowf("duplicates", func(m Mode) string { return strconv.Itoa(m.Duplicates) })
	rowf("wait to first delivery in the churn, p50 / p99 / max", func(m Mode) string {
		return fmt.Sprintf("%.0f / %.0f / %.0f ms", m.WaitP50Ms, m.WaitP99Ms, m.WaitMaxMs)
	})
	rowf("a stopped member's messages to another, p50 / max (stops with none seen)", func(m Mode) string {
		return fmt.Sprintf("%.0f / %.0f ms (%d)", m.RedeliveryP50Ms, m.RedeliveryMaxMs, m.RedeliveryUnseen)
	})
	return b.String()
}
