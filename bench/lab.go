package bench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/samsamq/samsa/internal/lab"
)

// Lab is the storage kind ("kind": "storage") of the lab's pipeline
// (package internal/lab).
type Lab struct {
	// Profile, if set, profiles each cell's runs: it is called with the
	// experiment's and the cell's names and returns the profile's stop.
	Profile func(experiment, cell string) func()
}

// Load reads and checks a storage experiment file.
func (k Lab) Load(path string) (lab.Experiment, error) {
	e, err := LoadExperiment(path)
	if err != nil {
		return nil, err
	}
	return labExperiment{e: e, profile: k.Profile}, nil
}

// Read reads a storage result file.
func (Lab) Read(path string) (lab.Result, error) {
	r, err := ReadResult(path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type labExperiment struct {
	e       *Experiment
	profile func(experiment, cell string) func()
}

// DataDir is .benchdata: on the disk of the working directory, which a
// storage run measures.
func (labExperiment) DataDir() string { return ".benchdata" }

func (x labExperiment) Run(ctx context.Context, env lab.Env) (lab.Result, error) {
	opts := RunOptions{Dir: env.DataDir, Quick: env.Quick, Progress: env.Progress, Command: env.Command, Machine: env.Machine}
	if x.profile != nil {
		opts.ProfileCell = func(cell string) func() { return x.profile(x.e.Name, cell) }
	}
	r, err := Run(ctx, x.e, opts)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Print writes each target's verdict and the result file's path.
func (r *ExperimentResult) Print(w io.Writer, path string) error {
	var b strings.Builder
	for _, t := range EvaluateTargets(r) {
		verdict := t.Note
		if t.Met != nil {
			verdict = fmt.Sprintf("%.3g %s: %s", t.Value, t.Bound, map[bool]string{true: "met", false: "MISSED"}[*t.Met])
		}
		fmt.Fprintf(&b, "target %s [%s]: %s\n", t.Name, t.Cell, verdict)
	}
	fmt.Fprintf(&b, "result: %s (%.0fs)\n", path, r.ElapsedSeconds)
	_, err := io.WriteString(w, b.String())
	return err
}

// Section is the result's PERFORMANCE.md section: Markdown with its
// charts.
func (r *ExperimentResult) Section(_ string, o lab.SectionOptions) (string, error) {
	var charts []Chart
	if !o.NoCharts {
		var err error
		if charts, err = WriteCharts(r, o.ChartDir, o.LinkBase); err != nil {
			return "", err
		}
	}
	return Markdown(r, charts, o.RenderedBy), nil
}

// Verdict counts the targets the cells missed.
func (r *ExperimentResult) Verdict() lab.Verdict {
	n := 0
	for _, t := range EvaluateTargets(r) {
		if t.Met != nil && !*t.Met {
			n++
		}
	}
	if n == 0 {
		return lab.Verdict{}
	}
	return lab.Verdict{Err: fmt.Errorf("%d targets missed", n)}
}
