package backlog

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/samsamq/samsa/internal/lab"
)

// A matrix of drains (the read path's experiment,
// experiments/read-path.json): the same backlog drained by cells that
// differ in how the broker answers pulls (from the files with sendfile,
// or read into memory: transferMsgByHeap) and in how many queues it lies
// in. Each cell runs the experiment's settings, cold repeats and a warm
// reference, each beside the raw read and the loopback ceiling measured
// in the same repeat, and the process's CPU per GiB drained. The checks
// hold each zero-copy cell against the heap cell of its queue count and
// against the loopback ceiling.

// Cell is one cell of a matrix.
type Cell struct {
	Name string `json:"name"`
	// TransferMsgByHeap: the broker reads every pull into memory.
	TransferMsgByHeap bool `json:"transfer_msg_by_heap,omitempty"`
	// Queues, if set, replaces the settings' queue count.
	Queues int `json:"queues,omitempty"`
}

// CellTargets are a matrix's targets.
type CellTargets struct {
	// CPURatio: a zero-copy cell's CPU per GiB over its heap cell's, at
	// most (default 0.5). The process holds the consumers too, which do
	// the same work in both: the broker's own ratio is lower.
	CPURatio float64 `json:"cpu_ratio,omitempty"`
	// ColdLoopback and WarmLoopback: a zero-copy cell's cold and warm
	// drain over the loopback ceiling, at least (defaults 0.5 and 0.6).
	ColdLoopback float64 `json:"cold_loopback,omitempty"`
	WarmLoopback float64 `json:"warm_loopback,omitempty"`
	// P99Ratio: a zero-copy cell's producers' p99 during the drain over
	// before it, at most (default 3).
	P99Ratio float64 `json:"p99_ratio,omitempty"`
}

func (t *CellTargets) ensureDefaults() {
	t.CPURatio, t.ColdLoopback = cmp.Or(t.CPURatio, 0.5), cmp.Or(t.ColdLoopback, 0.5)
	t.WarmLoopback, t.P99Ratio = cmp.Or(t.WarmLoopback, 0.6), cmp.Or(t.P99Ratio, 3)
}

// CellResult is one cell's runs.
type CellResult struct {
	Cell
	Queues int   `json:"queues"`
	Runs   []Run `json:"runs"`
	Warm   *Run  `json:"warm,omitempty"`
	Median Run   `json:"median"`
}

// CellCheck is one target held against one cell.
type CellCheck struct {
	Cell     string  `json:"cell"`
	Target   string  `json:"target"`
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	Met      bool    `json:"met"`
	Note     string  `json:"note,omitempty"`
}

// runCells runs every cell of e with base settings s.
func runCells(ctx context.Context, e *Experiment, s Settings, opts Options) (*Result, error) {
	res := &Result{Header: e.Header(opts.Quick), Settings: s, DrainTarget: e.DrainTarget, P99Target: e.P99Target,
		CellTargets: e.CellTargets}
	for i, c := range e.Cells {
		cs := s
		cs.TransferMsgByHeap = c.TransferMsgByHeap
		cs.Queues = cmp.Or(c.Queues, s.Queues)
		cs.WarmReference = true
		lab.Progressf(opts.Progress, "== %s: cell %d/%d: %s (%d queues)\n", e.Name, i+1, len(e.Cells), c.Name, cs.Queues)
		r, err := runSettings(ctx, e, e.Name+"/"+c.Name, cs, opts)
		if err != nil {
			return nil, fmt.Errorf("backlog: cell %s: %w", c.Name, err)
		}
		if i == 0 {
			res.Runs, res.Warm, res.Median, res.MedianP99Ratio = r.Runs, r.Warm, r.Median, r.MedianP99Ratio
		}
		res.Cells = append(res.Cells, CellResult{Cell: c, Queues: cs.Queues, Runs: r.Runs, Warm: r.Warm, Median: r.Median})
	}
	res.CellChecks = cellChecks(res.Cells, res.CellTargets)
	res.DrainNA, res.DrainMet, res.P99Met = true, true, true
	for _, c := range res.CellChecks {
		res.P99Met = res.P99Met && c.Met
	}
	return res, nil
}

// cellChecks holds every zero-copy cell against the targets.
func cellChecks(cells []CellResult, t CellTargets) []CellCheck {
	var out []CellCheck
	for _, c := range cells {
		if c.TransferMsgByHeap {
			continue
		}
		m := c.Median
		out = append(out, CellCheck{Cell: c.Name, Target: "cold drain ÷ loopback ceiling ≥", Measured: m.LoopbackRatio, Limit: t.ColdLoopback,
			Met: m.LoopbackRatio >= t.ColdLoopback})
		if w := c.Warm; w != nil {
			out = append(out, CellCheck{Cell: c.Name, Target: "warm drain ÷ loopback ceiling ≥", Measured: w.LoopbackRatio, Limit: t.WarmLoopback,
				Met: w.LoopbackRatio >= t.WarmLoopback})
		}
		out = append(out, CellCheck{Cell: c.Name, Target: "producers' p99 during ÷ before ≤", Measured: m.P99Ratio, Limit: t.P99Ratio,
			Met: m.P99Ratio > 0 && m.P99Ratio <= t.P99Ratio})
		for _, h := range cells {
			if !h.TransferMsgByHeap || h.Queues != c.Queues || h.Median.CPUPerGiB <= 0 {
				continue
			}
			// The broker's CPU where the profile split it, else the
			// process's (broker and clients).
			a, b, what := m.BrokerCPUPerGiB, h.Median.BrokerCPUPerGiB, "the broker's CPU (CPU profile, labelled goroutines)"
			if a <= 0 || b <= 0 {
				a, b, what = m.CPUPerGiB, h.Median.CPUPerGiB, "process CPU (broker and consumers)"
			}
			r := a / b
			out = append(out, CellCheck{Cell: c.Name, Target: "CPU per GiB ÷ " + h.Name + "'s ≤", Measured: r, Limit: t.CPURatio,
				Met: r <= t.CPURatio, Note: fmt.Sprintf("%.2f ÷ %.2f s/GiB, cold; %s", a, b, what)})
		}
	}
	return out
}

// cellsMarkdown renders a matrix: a row per cell, then the checks.
func (r *Result) cellsMarkdown(b *strings.Builder) {
	s := r.Settings
	fmt.Fprintf(b, "Run %s; MB = 10⁶ B; %s flush; backlog of %d MiB of %d B messages, drained by %d pull consumers (Samsa's client, CRC check on) at full speed; steady producers %g msg/s on another topic (open loop); cold = page cache dropped, warm = the same backlog left in it; loopback = `bench loopback --conns %d` and raw read = `bench disk --read` right after each drain. CPU s/GiB is the process's (broker, consumers and producers share it; /proc/self/stat) over the drain; broker CPU is its share on the goroutines the embedded broker and name server run (a CPU profile over the drain, goroutines labelled by side; the runtime's own, such as the garbage collector's, count in neither side).\n\n",
		r.Start.Format("2006-01-02 15:04 UTC"), s.Flush, s.BacklogBytes>>20, s.MessageSize, s.Consumers, s.SteadyRate, s.Consumers)
	b.WriteString("| cell | pulls from | queues | cold MB/s | warm MB/s | loopback MB/s | cold ÷ loopback | warm ÷ loopback | raw read MB/s | CPU s/GiB cold | CPU s/GiB warm | broker CPU s/GiB cold | broker CPU s/GiB warm | send p99 before ms | during (cold) ms | during ÷ before |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		m := c.Median
		w := Run{}
		if c.Warm != nil {
			w = *c.Warm
		}
		from := "files (sendfile; runs < 16 KiB read, unchecked)"
		if c.TransferMsgByHeap {
			from = "memory (transferMsgByHeap)"
		}
		fmt.Fprintf(b, "| %s | %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", c.Name, from, c.Queues,
			m.DrainMBps, w.DrainMBps, m.LoopbackMBps, m.LoopbackRatio, w.LoopbackRatio, m.ReadMBps, m.CPUPerGiB, w.CPUPerGiB, m.BrokerCPUPerGiB, w.BrokerCPUPerGiB,
			float64(m.SendBefore.P99)/1000, float64(m.SendDuring.P99)/1000, m.P99Ratio)
	}
	yes := map[bool]string{true: "yes", false: "**no**"}
	b.WriteString("\n| cell | target | measured | met |\n|---|---|---|---|\n")
	for _, c := range r.CellChecks {
		note := ""
		if c.Note != "" {
			note = " (" + c.Note + ")"
		}
		fmt.Fprintf(b, "| %s | %s %.2f | %.2f%s | %s |\n", c.Cell, c.Target, c.Limit, c.Measured, note, yes[c.Met])
	}
}

// cellsVerdict fails when a check missed.
func (r *Result) cellsVerdict() lab.Verdict {
	var missed []string
	for _, c := range r.CellChecks {
		if !c.Met {
			missed = append(missed, fmt.Sprintf("%s: %s %.2f (measured %.2f)", c.Cell, c.Target, c.Limit, c.Measured))
		}
	}
	if len(missed) == 0 {
		return lab.Verdict{}
	}
	return lab.Verdict{Err: fmt.Errorf("%s: targets missed: %s", r.Experiment, strings.Join(missed, "; "))}
}
