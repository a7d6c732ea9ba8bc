package backlog

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

// Lab is the backlog-drain kind of the lab's pipeline (package
// internal/lab).
type Lab struct {
	// NewTarget starts a repeat's cluster in a fresh directory under dir
	// (the run's data dir).
	NewTarget func(dir string, to TargetOptions) (Target, error)
}

// Load reads and checks a backlog-drain experiment file.
func (k Lab) Load(path string) (lab.Experiment, error) {
	e, err := LoadExperiment(path)
	if err != nil {
		return nil, err
	}
	return labExperiment{e: e, newTarget: k.NewTarget}, nil
}

// Read reads a backlog-drain result file.
func (Lab) Read(path string) (lab.Result, error) {
	r, err := resultfile.Read[Result](path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type labExperiment struct {
	e         *Experiment
	newTarget func(dir string, to TargetOptions) (Target, error)
}

// DataDir is .benchdata/backlog: a real disk (/tmp may be tmpfs).
func (labExperiment) DataDir() string { return filepath.Join(".benchdata", "backlog") }

func (x labExperiment) Run(ctx context.Context, env lab.Env) (lab.Result, error) {
	r, err := RunExperiment(ctx, x.e, Options{Quick: env.Quick, DiskDir: env.DataDir, Progress: env.Progress,
		NewTarget: func(_ context.Context, to TargetOptions) (Target, error) { return x.newTarget(env.DataDir, to) }})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Print writes the tables and the result file's path.
func (r *Result) Print(w io.Writer, path string) error { return lab.Print(w, r.Markdown(), path) }

// Section is the result's PERFORMANCE.md section.
func (r *Result) Section(path string, o lab.SectionOptions) (string, error) {
	return lab.Section(r.Markdown(), &r.Header, path, o.RenderedBy), nil
}

// Verdict is the drain's (unless paced) and the p99's target.
func (r *Result) Verdict() lab.Verdict {
	if (r.DrainNA || r.DrainMet) && r.P99Met {
		return lab.Verdict{}
	}
	return lab.Verdict{Err: fmt.Errorf("backlog-drain: target missed (drain %.2f× read, target %.2f×; p99 %.2f× before, target %.2f×)",
		r.Median.DrainRatio, r.DrainTarget, r.MedianP99Ratio, r.P99Target)}
}
