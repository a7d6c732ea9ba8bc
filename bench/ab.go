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
// measuring command, on the same machine in the same minutes: a bench
// subcommand (the storage engine, the raw disk) or loadgen (the wire: an
// embedded name server and broker in the measured process, producers and
// consumers over loopback).
// A single run of either spreads ±15% on a shared machine; the ratio of
// two runs taken back to back spreads less, and the median of many such
// ratios is what PERFORMANCE.md reports when it compares binaries.
type ABOptions struct {
	// A and B are the binaries; B is measured against A (ratio B/A).
	A, B string
	// Command is the samsa command each run starts (default "bench"):
	// "bench", whose Args begin with a measuring subcommand, or
	// "loadgen", whose Args are its flags (without --namesrv it runs
	// one workload against an embedded cluster). Both write their
	// result as JSON where --json says, and both exist in binaries older
	// than this option, so an old commit's binary can be measured.
	Command string
	// Args follow "samsa Command": for bench the subcommand and its flags
	// (for instance storage --backend pwrite ...), for loadgen its flags;
	// never --json, which RunAB adds.
	Args []string
	// Rounds is the number of rounds (default 8). A round runs both
	// binaries: A then B in odd rounds, B then A in even ones (A-B-B-A),
	// so neither always runs on a machine the other just warmed up or
	// filled with dirty pages.
	Rounds int
	// Metric is the numeric field of the run's JSON result compared
	// (default msgs_per_sec): a top-level field or a dotted path into
	// nested objects (send_latency_us.p99). The ratio is B/A whatever the
	// metric: for a latency, above 1 is worse.
	Metric string
	// Dir holds the runs' JSON files (default: a temporary directory,
	// removed at the end).
	Dir string
	// Resamples and Seed drive the bootstrap of the median's confidence
	// interval (defaults DefaultABResamples and DefaultABSeed): fixed,
	// so the same rounds always give the same interval.
	Resamples int
	Seed      uint64
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
	Kind    string    `json:"kind"` // "ab"
	A       string    `json:"a"`
	B       string    `json:"b"`
	Command string    `json:"command"` // bench or loadgen
	Args    []string  `json:"args"`
	Metric  string    `json:"metric"`
	Start   time.Time `json:"start"`
	Rounds  []ABRound `json:"rounds"`
	Ratio   Spread    `json:"ratio"` // of the rounds' B/A
	// CI is the bootstrap confidence interval of Ratio.Median.
	CI      ABInterval         `json:"ci"`
	AValues Spread             `json:"a_values"`
	BValues Spread             `json:"b_values"`
	Machine resultfile.Machine `json:"machine"`
}

// WriteJSON writes the result as indented JSON (the --json flag).
func (r *ABResult) WriteJSON(path string) error { return writeJSON(path, r) }

// Summary is the result in one line.
func (r *ABResult) Summary() string {
	return fmt.Sprintf("B/A %s: median %.3f×, %s (rounds %.3f–%.3f×, %d rounds); A median %.0f, B median %.0f",
		r.Metric, r.Ratio.Median, r.CI, r.Ratio.Min, r.Ratio.Max, r.Ratio.N, r.AValues.Median, r.BValues.Median)
}

func (o *ABOptions) defaults() error {
	if o.Rounds == 0 {
		o.Rounds = 8
	}
	if o.Command == "" {
		o.Command = "bench"
	}
	if o.Resamples == 0 {
		o.Resamples = DefaultABResamples
	}
	if o.Seed == 0 {
		o.Seed = DefaultABSeed
	}
	if o.Metric == "" {
		o.Metric = "msgs_per_sec"
	}
	switch {
	case o.A == "" || o.B == "":
		return errors.New("bench ab: want two binaries (--a and --b)")
	case o.Rounds < 1:
		return fmt.Errorf("bench ab: %d rounds", o.Rounds)
	case o.Command != "bench" && o.Command != "loadgen":
		return fmt.Errorf("bench ab: command %q: want bench or loadgen", o.Command)
	case o.Command == "bench" && len(o.Args) == 0:
		return errors.New("bench ab: want the bench subcommand to run (after --), e.g. storage --backend pwrite ...")
	}
	for _, a := range o.Args {
		if o.Command == "loadgen" && (a == "--experiment" || strings.HasPrefix(a, "--experiment=") || a == "-experiment" || strings.HasPrefix(a, "-experiment=")) {
			return errors.New("bench ab: loadgen --experiment writes no one result to compare: give one workload's flags")
		}
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
	res := &ABResult{Kind: "ab", A: o.A, B: o.B, Command: o.Command, Args: o.Args, Metric: o.Metric, Start: time.Now().UTC(),
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
			v, err := runABOnce(ctx, bin, o.Command, o.Args, file, o.Metric)
			if err != nil {
				return nil, &ABRunError{Round: i, Which: which, Bin: bin, Err: err}
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
	res.CI = BootstrapMedianCI(ratios, ABLevel, o.Resamples, o.Seed)
	return res, nil
}

// ABRunError is a run that failed or gave no metric: which binary ("a"
// or "b"), in which round.
type ABRunError struct {
	Round int
	Which string
	Bin   string
	Err   error
}

func (e *ABRunError) Error() string {
	return fmt.Sprintf("bench ab: round %d, %s (%s): %v", e.Round, e.Which, e.Bin, e.Err)
}

func (e *ABRunError) Unwrap() error { return e.Err }

// runABOnce runs "bin command args --json file" and returns the metric.
func runABOnce(ctx context.Context, bin, command string, args []string, file, metric string) (float64, error) {
	argv := append(append([]string{command}, args...), "--json", file)
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
	v, err := metricOf(b, metric)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%s: %s is %v: nothing to compare", file, metric, v)
	}
	return v, nil
}

// metricOf reads the number at path (a field name, or names joined by
// dots into nested objects) from the JSON object b.
func metricOf(b []byte, path string) (float64, error) {
	raw := json.RawMessage(b)
	for i, name := range strings.Split(path, ".") {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			if i == 0 {
				return 0, err
			}
			return 0, fmt.Errorf("field %q is not an object", strings.Join(strings.Split(path, ".")[:i], "."))
		}
		var ok bool
		if raw, ok = fields[name]; !ok {
			return 0, fmt.Errorf("has no field %q", path)
		}
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("field %q is not a number: %s", path, raw)
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
