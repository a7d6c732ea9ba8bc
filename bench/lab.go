package bench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/samsamq/samsa/internal/lab"
)

// LabKind is the storage kind ("kind": "storage") of the lab's pipeline
// (package internal/lab). profile, if not nil, profiles each cell's
// runs: it is called with the experiment's and the cell's names and
// returns the profile's stop.
func LabKind(profile func(experiment, cell string) func()) lab.Kind {
	// .benchdata: on the disk of the working directory, which a storage
	// run measures.
	return lab.NewKind(".benchdata", LoadExperiment, func(ctx context.Context, e *Experiment, env lab.Env) (*ExperimentResult, error) {
		opts := RunOptions{Dir: env.DataDir, Quick: env.Quick, Progress: env.Progress, Command: env.Command, Machine: env.Machine}
		if profile != nil {
			opts.ProfileCell = func(cell string) func() { return profile(e.Name, cell) }
		}
		return Run(ctx, e, opts)
	})
}

// Markdown is the result's section without charts.
func (r *ExperimentResult) Markdown() string { return Markdown(r, nil, "") }

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
