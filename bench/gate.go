package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// GateCell is one measurement of the performance gate: a command both
// binaries run in alternated rounds (RunAB), its metric compared as B/A.
type GateCell struct {
	// Name is stable: Perf-Accept trailers name it.
	Name string
	// Command and Args are RunAB's (bench or loadgen; no --json).
	Command string
	Args    []string
	// Metric is a number where more is better (default msgs_per_sec).
	Metric string
	// Rounds (default DefaultGateRounds).
	Rounds int
}

// DefaultGateCells are the gate's cells: the storage engine's page-cache
// path (pwrite, async flush, 1 writer: what a CPU cost in the append path
// shows in), its group commit (pwrite, sync flush, 64 writers: batching
// and fsync), and the wire (loadgen: an embedded name server and broker
// in the measured process, 8 producers sending synchronously over
// loopback, a consumer reading along; the metric is the produce rate).
// Each run is short (about 3 s of storage, 4 s end to end): the gate buys
// confidence with rounds, not with long runs. dataDir holds the storage
// runs' stores (each run makes a fresh one and removes it).
func DefaultGateCells(dataDir string) []GateCell {
	storage := func(flush string, writers int) []string {
		return []string{"storage", "--backend", "pwrite", "--flush", flush, "--size", "1024",
			"--writers", strconv.Itoa(writers), "--warmup", "1s", "--duration", "2s", "--dir", dataDir}
	}
	return []GateCell{
		{Name: "storage-async-w1", Command: "bench", Args: storage("async", 1)},
		{Name: "storage-sync-w64", Command: "bench", Args: storage("sync", 64)},
		{Name: "e2e-produce", Command: "loadgen", Args: []string{"--producers", "8", "--consumers", "1",
			"--size", "1024", "--send", "sync", "--warmup", "1s", "--duration", "3s", "--drain", "5s",
			"--report-interval", "1m"}},
	}
}

// GateOptions configure RunGate.
type GateOptions struct {
	// Base and Head are the binaries: A is the base, B the head.
	Base, Head string
	// BaseRev and HeadRev name them in the printed table (informative).
	BaseRev, HeadRev string
	Cells            []GateCell
	// Rounds, when above 0, replaces every cell's.
	Rounds int
	// Threshold: a cell regresses when its whole interval of B/A is
	// below it (default DefaultABThreshold).
	Threshold float64
	// Accept holds the cells whose regression is intended, each with its
	// reason (Perf-Accept trailers, ParseAccepts): printed, not failed.
	Accept map[string]string
	// Dir keeps each cell's runs (Dir/<cell>/); default a temporary
	// directory, removed.
	Dir string
	// Log gets RunAB's progress lines, each prefixed with the cell.
	Log io.Writer
}

// Gate verdicts beyond ABVerdict's.
const (
	// GateAccepted: a regression a Perf-Accept trailer accepts.
	GateAccepted ABVerdict = "accepted"
	// GateNoBase: the base binary could not run the cell (an option it
	// predates, say): nothing to compare, not a failure.
	GateNoBase ABVerdict = "no base"
	// GateError: the head binary could not run the cell: a failure.
	GateError ABVerdict = "ERROR"
)

// GateRow is one cell's outcome.
type GateRow struct {
	Cell    string    `json:"cell"`
	Verdict ABVerdict `json:"verdict"`
	// Result is nil when the cell has no rounds (GateNoBase, GateError).
	Result *ABResult `json:"result,omitempty"`
	// Accepted is the Perf-Accept reason naming the cell, if any.
	Accepted string `json:"accepted,omitempty"`
	// Note says why a cell has no result.
	Note string `json:"note,omitempty"`
}

// Fails says whether the row fails the gate.
func (r GateRow) Fails() bool { return r.Verdict == ABRegression || r.Verdict == GateError }

// GateResult is RunGate's answer.
type GateResult struct {
	BaseRev   string    `json:"base_rev,omitempty"`
	HeadRev   string    `json:"head_rev,omitempty"`
	Threshold float64   `json:"threshold"`
	Rows      []GateRow `json:"rows,omitempty"`
	// Skipped says why nothing was measured (no base to build): the
	// gate passes, saying so.
	Skipped string `json:"skipped,omitempty"`
	// Notes are said above the table (a dirty working tree, a
	// Perf-Accept trailer naming no cell).
	Notes []string `json:"notes,omitempty"`
}

// WriteJSON writes the gate's rows as indented JSON.
func (g *GateResult) WriteJSON(path string) error { return writeJSON(path, g) }

// Failed names the cells that fail the gate.
func (g *GateResult) Failed() []string {
	var names []string
	for _, r := range g.Rows {
		if r.Fails() {
			names = append(names, r.Cell)
		}
	}
	return names
}

// Err is nil when the gate passes, else an error naming the failed cells.
func (g *GateResult) Err() error {
	if f := g.Failed(); len(f) > 0 {
		return fmt.Errorf("perf gate: failed: %s", strings.Join(f, ", "))
	}
	return nil
}

// SkippedGate is a gate that measured nothing, for reason.
func SkippedGate(reason string) *GateResult {
	return &GateResult{Threshold: DefaultABThreshold, Skipped: reason}
}

func (o *GateOptions) defaults() error {
	if o.Threshold == 0 {
		o.Threshold = DefaultABThreshold
	}
	if o.Base == "" || o.Head == "" {
		return errors.New("perf gate: want a base and a head binary")
	}
	if len(o.Cells) == 0 {
		return errors.New("perf gate: no cells")
	}
	seen := map[string]bool{}
	for _, c := range o.Cells {
		if c.Name == "" || seen[c.Name] || strings.ContainsAny(c.Name, " :/") {
			return fmt.Errorf("perf gate: cell name %q: want unique names without spaces, colons or slashes", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// RunGate runs every cell's A/B rounds, base as A and head as B, and
// judges each cell's interval of B/A (VerdictOf). It fails (Err) only on
// a confident regression that no Perf-Accept names, or when the head
// cannot run a cell. An error is returned only when the gate could not
// run at all (bad options, a cancelled context).
func RunGate(ctx context.Context, o GateOptions) (*GateResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "samsa-perf-gate-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(tmp) }() // scratch: a leftover is harmless
		dir = tmp
	}
	g := &GateResult{BaseRev: o.BaseRev, HeadRev: o.HeadRev, Threshold: o.Threshold}
	for name := range o.Accept {
		if !seen(o.Cells, name) {
			g.Notes = append(g.Notes, fmt.Sprintf("Perf-Accept names %q, which is no cell of this gate", name))
		}
	}
	sort.Strings(g.Notes)
	for _, c := range o.Cells {
		rounds := c.Rounds
		if o.Rounds > 0 {
			rounds = o.Rounds
		} else if rounds == 0 {
			rounds = DefaultGateRounds
		}
		ab := ABOptions{A: o.Base, B: o.Head, Command: c.Command, Args: c.Args, Metric: c.Metric, Rounds: rounds,
			Dir: filepath.Join(dir, c.Name)}
		if o.Log != nil {
			ab.Log = &prefixWriter{w: o.Log, prefix: c.Name + ": "}
		}
		row := GateRow{Cell: c.Name, Accepted: o.Accept[c.Name]}
		res, err := RunAB(ctx, ab)
		var runErr *ABRunError
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &runErr) && runErr.Which == "a":
			row.Verdict, row.Note = GateNoBase, "the base binary could not run it: "+runErr.Err.Error()
		case err != nil:
			row.Verdict, row.Note = GateError, err.Error()
		default:
			row.Result, row.Verdict = res, res.Verdict(o.Threshold)
			if row.Verdict == ABRegression && row.Accepted != "" {
				row.Verdict = GateAccepted
			}
		}
		if o.Log != nil {
			_, _ = fmt.Fprintf(o.Log, "%s: %s\n", c.Name, row.line()) // progress only
		}
		g.Rows = append(g.Rows, row)
	}
	return g, nil
}

func seen(cells []GateCell, name string) bool {
	for _, c := range cells {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (r GateRow) line() string {
	if r.Result == nil {
		return fmt.Sprintf("%s (%s)", r.Verdict, r.Note)
	}
	return fmt.Sprintf("%s, median B/A %.3f×, %s", r.Verdict, r.Result.Ratio.Median, r.Result.CI)
}

// Print writes the gate's table: cell, medians, median B/A, its 95%
// interval, rounds, verdict; then the accepted cells with their reasons,
// the notes on cells without rounds, and the outcome in one line.
func (g *GateResult) Print(w io.Writer) error {
	var b strings.Builder
	if g.Skipped != "" {
		fmt.Fprintf(&b, "perf gate: SKIPPED, passing: %s\n", g.Skipped)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "perf gate: B = head %s over A = base %s; a regression when the whole 95%% bootstrap interval of the median B/A is below %.2f×\n",
		orDash(g.HeadRev), orDash(g.BaseRev), g.Threshold)
	for _, n := range g.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// tw writes into b, a strings.Builder: its writes cannot fail.
	_, _ = fmt.Fprintln(tw, "cell\tmetric\tA median\tB median\tmedian B/A\t95% CI\trounds\tverdict")
	for _, r := range g.Rows {
		if res := r.Result; res != nil {
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.3f×\t%.3f–%.3f×\t%d\t%s\n", r.Cell, res.Metric, res.AValues.Median,
				res.BValues.Median, res.Ratio.Median, res.CI.Lo, res.CI.Hi, res.Ratio.N, r.Verdict)
		} else {
			_, _ = fmt.Fprintf(tw, "%s\t–\t–\t–\t–\t–\t0\t%s\n", r.Cell, r.Verdict)
		}
	}
	_ = tw.Flush()
	for _, r := range g.Rows {
		switch {
		case r.Accepted != "":
			fmt.Fprintf(&b, "accepted: %s (%s): %s\n", r.Cell, r.Verdict, r.Accepted)
		case r.Note != "":
			fmt.Fprintf(&b, "%s: %s\n", r.Cell, r.Note)
		}
	}
	if f := g.Failed(); len(f) > 0 {
		fmt.Fprintf(&b, "perf gate: FAILED: %s (an intended trade-off is accepted by a trailer in HEAD's commit message: Perf-Accept: %s: REASON)\n",
			strings.Join(f, ", "), f[0])
	} else {
		b.WriteString("perf gate: passed\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// acceptLine is a Perf-Accept trailer: "Perf-Accept: CELL: REASON".
var acceptLine = regexp.MustCompile(`(?i)^perf-accept:\s*(.*)$`)

// ParseAccepts reads the Perf-Accept trailers of commit messages: each
// line "Perf-Accept: CELL: REASON" accepts CELL's regression for REASON.
// A trailer without a cell or a reason is returned in bad, unused.
func ParseAccepts(messages string) (accept map[string]string, bad []string) {
	accept = map[string]string{}
	for _, line := range strings.Split(messages, "\n") {
		m := acceptLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		cell, reason, ok := strings.Cut(m[1], ":")
		cell, reason = strings.TrimSpace(cell), strings.TrimSpace(reason)
		if !ok || cell == "" || reason == "" || strings.ContainsAny(cell, " \t") {
			bad = append(bad, strings.TrimSpace(line))
			continue
		}
		if prev, dup := accept[cell]; dup {
			reason = prev + "; " + reason
		}
		accept[cell] = reason
	}
	return accept, bad
}

// prefixWriter prefixes each line written with prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	for _, l := range lines {
		if l != "" {
			out.WriteString(p.prefix + l)
		}
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}
