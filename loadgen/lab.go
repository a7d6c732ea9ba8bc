package loadgen

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/samsamq/samsa/internal/lab"
)

// Lab is the end-to-end kind ("kind": "e2e") of the lab's pipeline
// (package internal/lab).
type Lab struct {
	// NewDriver makes each run's driver and the cluster it needs.
	NewDriver DriverFactory
}

// Load reads and checks an e2e experiment file.
func (k Lab) Load(path string) (lab.Experiment, error) {
	e, err := LoadExperiment(path)
	if err != nil {
		return nil, err
	}
	return labExperiment{e: e, newDriver: k.NewDriver}, nil
}

// Read reads an e2e result file.
func (Lab) Read(path string) (lab.Result, error) {
	r, err := ReadResult(path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type labExperiment struct {
	e         *Experiment
	newDriver DriverFactory
}

// DataDir is "": each cell's cluster keeps its data in a temp dir of its
// own unless the command line names a directory.
func (labExperiment) DataDir() string { return "" }

func (x labExperiment) Run(ctx context.Context, env lab.Env) (lab.Result, error) {
	r, err := RunExperiment(ctx, x.e, env.Quick, x.newDriver, env.Progress)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Print writes the tables and the result file's path.
func (r *ExperimentResult) Print(w io.Writer, path string) error {
	return lab.Print(w, r.Markdown(), path)
}

// Section is the result's PERFORMANCE.md section: the tables, the charts,
// the machine and the result file.
func (r *ExperimentResult) Section(path string, o lab.SectionOptions) (string, error) {
	var charts []Chart
	if !o.NoCharts {
		var err error
		if charts, err = r.WriteCharts(o.ChartDir, o.LinkBase); err != nil {
			return "", err
		}
	}
	return lab.Section(r.MarkdownCharts(charts), &r.Header, path, o.RenderedBy), nil
}

// Verdict names the comparisons with a target that missed it (or could
// not be evaluated).
func (r *ExperimentResult) Verdict() lab.Verdict {
	missed := r.MissedTargets()
	if len(missed) == 0 {
		return lab.Verdict{}
	}
	return lab.Verdict{Missed: "loadgen: target missed: " + strings.Join(missed, "; "),
		Err: fmt.Errorf("%d of the comparisons with a target missed it", len(missed))}
}
