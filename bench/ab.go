package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
)

// ABOptions configure RunAB: two samsa binaries measured in turns by one
// measuring bench subcommand, on the same machine in the same minutes.
// A single run of either spreads ±15% on a shared machine; the ratio of
// two runs taken back to back spreads less, and the median of many such
// ratios is what PERFORMANCE.md reports when it compares binaries.
type ABOptions struct {
	// A and B are the binaries; B is measured against A (ratio B/A).
	A, B string
	// Args is the bench subcommand and its flags, as after "samsa bench"
	// (for instance storage --backend pwrite ...), without --json, which
	// RunAB adds.
	Args []string
	// Rounds is the number of rounds (default 8). A round runs both
	// binaries: A then B in odd rounds, B then A in even ones (A-B-B-A),
	// so neither always runs on a machine the other just warmed up or
	// filled with dirty pages.
	Rounds int
	// Metric is the top-level numeric field of the subcommand's JSON
	// result compared (default msgs_per_sec).
	Metric string
	// Dir holds the runs' JSON files (default: a temporary directory,
	// removed at the end).
	Dir string
	// Log, if set, gets a line per run and per round.
	Log io.Writer
}

// ABRound is one round: each binary's metric and B/A.
type ABRound struct {
	Round int     `json:"round"`
	First string  `json:"first"` // "a" or "b"
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Ratio float64 `json:"ratio"`
	AFile string  `json:"a_file,omitempty"`
	BFile string  `json:"b_file,omitempty"`
}

// ABResult is RunAB's answer (samsa bench ab --json).
type ABResult struct {
	Kind    string             `json:"kind"` // "ab"
	A       string             `json:"a"`
	B       string             `json:"b"`
	Args    []string           `json:"args"`
	Metric  string             `json:"metric"`
	Start   time.Time          `json:"start"`
	Rounds  []ABRound          `json:"rounds"`
	Ratio   Spread             `json:"ratio"` // of the rounds' B/A
	AValues Spread             `json:"a_values"`
	BValues Spread             `json:"b_values"`
	Machine resultfile.Machine `json:"machine"`
}

// WriteJSON writes the result as indented JSON (the --json flag).
func (r *ABResult) WriteJSON(path string) error { return writeJSON(path, r) }

// Summary is the result in one line.
func (r *ABResult) Summary() string {
	return fmt.Sprintf("B/A %s: median %.3f× (rounds %.3f–%.3f×, %d rounds); A median %.0f, B median %.0f",
		r.Metric, r.Ratio.Median, r.Ratio.Min, r.Ratio.Max, r.Ratio.N, r.AValues.Median, r.BValues.Median)
}

func (o *ABOptions) defaults() error {
	if o.Rounds == 0 {
		o.Rounds = 8
	}
	if o.Metric == "" {
		o.Metric = "msgs_per_sec"
	}
	switch {
	case o.A == "" || o.B == "":
		return errors.New("bench ab: want two binaries (--a and --b)")
	case o.Rounds < 1:
		return fmt.Errorf("bench ab: %d rounds", o.Rounds)
	case len(o.Args) == 0:
		return errors.New("bench ab: want the bench subcommand to run (after --), e.g. storage --backend pwrite ...")
	}
	for _, a := range o.Args {
		if a == "--json" || strings.HasPrefix(a, "--json=") || a == "-json" || strings.HasPrefix(a, "-json=") {
			return errors.New("bench ab: the subcommand's --json is RunAB's to set")
		}
	}
	return nil
}

// RunAB runs the rounds and returns the ratios. A run that fails, or
// whose result lacks the metric, ends it with an error naming the binary,
// the round and the run's own output.
func RunAB(ctx context.Context, o ABOptions) (*ABResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "samsa-bench-ab-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(tmp) }() // scratch: a leftover is harmless
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &ABResult{Kind: "ab", A: o.A, B: o.B, Args: o.Args, Metric: o.Metric, Start: time.Now().UTC(),
		Machine: *resultfile.CollectMachine(dir)}
	var ratios, as, bs []float64
	for i := 1; i <= o.Rounds; i++ {
		r := ABRound{Round: i, First: "a"}
		order := []string{"a", "b"}
		if i%2 == 0 {
			r.First, order = "b", []string{"b", "a"}
		}
		for _, which := range order {
			bin := o.A
			if which == "b" {
				bin = o.B
			}
			file := filepath.Join(dir, fmt.Sprintf("round%02d-%s.json", i, which))
			v, err := runABOnce(ctx, bin, o.Args, file, o.Metric)
			if err != nil {
				return nil, fmt.Errorf("bench ab: round %d, %s (%s): %w", i, which, bin, err)
			}
			if which == "a" {
				r.A, r.AFile = v, file
			} else {
				r.B, r.BFile = v, file
			}
			if o.Log != nil {
				_, _ = fmt.Fprintf(o.Log, "round %d/%d %s: %s %.0f\n", i, o.Rounds, which, o.Metric, v) // progress only
			}
		}
		if o.Dir == "" {
			r.AFile, r.BFile = "", "" // removed with the temporary directory
		}
		r.Ratio = r.B / r.A
		res.Rounds = append(res.Rounds, r)
		ratios, as, bs = append(ratios, r.Ratio), append(as, r.A), append(bs, r.B)
		if o.Log != nil {
			_, _ = fmt.Fprintf(o.Log, "round %d/%d: B/A %.3f×\n", i, o.Rounds, r.Ratio) // progress only
		}
	}
	res.Ratio, res.AValues, res.BValues = SpreadOf(ratios), SpreadOf(as), SpreadOf(bs)
	return res, nil
}

// runABOnce runs "bin bench args --json file" and returns the metric.
func runABOnce(ctx context.Context, bin string, args []string, file, metric string) (float64, error) {
	argv := append(append([]string{"bench"}, args...), "--json", file)
	cmd := exec.CommandContext(ctx, bin, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%w; its output: %s", err, lastLines(out.String(), 5))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("no JSON result (%w); its output: %s", err, lastLines(out.String(), 5))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	raw, ok := fields[metric]
	if !ok {
		return 0, fmt.Errorf("%s has no field %q", file, metric)
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("%s: field %q is not a number: %s", file, metric, raw)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%s: %s is %v: nothing to compare", file, metric, v)
	}
	return v, nil
}

// lastLines is the last n lines of s, on one line.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
