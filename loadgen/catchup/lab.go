package catchup

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

// Lab is the replication-catchup kind of the lab's pipeline (package
// internal/lab).
type Lab struct {
	// NewTarget starts a repeat's master in a fresh directory under dir
	// (the run's data dir).
	NewTarget func(dir string) (Target, error)
}

// Load reads and checks a replication-catchup experiment file.
func (k Lab) Load(path string) (lab.Experiment, error) {
	e, err := LoadExperiment(path)
	if err != nil {
		return nil, err
	}
	return labExperiment{e: e, newTarget: k.NewTarget}, nil
}

// Read reads a replication-catchup result file.
func (Lab) Read(path string) (lab.Result, error) {
	r, err := resultfile.Read[Result](path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type labExperiment struct {
	e         *Experiment
	newTarget func(dir string) (Target, error)
}

// DataDir is .benchdata/catchup: a real disk (/tmp may be tmpfs).
func (labExperiment) DataDir() string { return filepath.Join(".benchdata", "catchup") }

func (x labExperiment) Run(ctx context.Context, env lab.Env) (lab.Result, error) {
	r, err := RunExperiment(ctx, x.e, Options{Quick: env.Quick, DiskDir: env.DataDir, Progress: env.Progress,
		NewTarget: func(context.Context) (Target, error) { return x.newTarget(env.DataDir) }})
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

// Verdict is the median catch-up ratio's target.
func (r *Result) Verdict() lab.Verdict {
	if r.Met {
		return lab.Verdict{}
	}
	return lab.Verdict{Err: fmt.Errorf("replication-catchup: target missed (catch-up %.2f× disk, target %.2f×)", r.Median.Ratio, r.Target)}
}
