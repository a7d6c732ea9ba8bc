package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

// Lab is the chaos kind ("kind": "chaos") of the lab's pipeline (package
// internal/lab).
type Lab struct{}

// Load reads and checks a chaos experiment file.
func (Lab) Load(path string) (lab.Experiment, error) {
	e, err := LoadExperiment(path)
	if err != nil {
		return nil, err
	}
	return labExperiment{e: e}, nil
}

// Read reads a chaos result file.
func (Lab) Read(path string) (lab.Result, error) {
	r, err := resultfile.Read[Result](path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// OptionsExperiment is a run of o (samsa chaos's flags) as an experiment
// of the pipeline: the Env's binary, data dir and seed replace o's.
func OptionsExperiment(o Options) lab.Experiment { return labExperiment{o: o} }

// labExperiment is an experiment file's run (e set) or a run of o.
type labExperiment struct {
	e *Experiment
	o Options
}

// DataDir is .benchdata/chaos, where the run's data and logs go.
func (labExperiment) DataDir() string { return filepath.Join(".benchdata", "chaos") }

func (x labExperiment) Run(ctx context.Context, env lab.Env) (lab.Result, error) {
	if env.Binary == "" {
		return nil, errors.New("chaos: no samsa binary to run")
	}
	o := x.o
	if x.e != nil {
		o = x.e.Options(env.Binary, env.DataDir, env.Seed, env.Quick)
	}
	o.Binary, o.Dir, o.Seed, o.Progress = env.Binary, env.DataDir, env.Seed, env.Progress
	res, err := Run(ctx, o)
	if err != nil {
		return nil, err
	}
	if x.e != nil {
		res.Experiment, res.Description, res.Quick = x.e.Name, x.e.Description, env.Quick
	}
	return res, nil
}

// Print writes the tables, the result file's path and where the logs
// are.
func (res *Result) Print(w io.Writer, path string) error {
	if err := lab.Print(w, res.Markdown(), path); err != nil {
		return err
	}
	if res.Dir == "" {
		return nil
	}
	_, err := fmt.Fprintf(w, "logs: %s (each cycle's fault time is in the result)\n", res.Dir)
	return err
}

// Section is the result's PERFORMANCE.md section.
func (res *Result) Section(path string, o lab.SectionOptions) (string, error) {
	return lab.Section(res.Markdown(), &res.Header, path, o.RenderedBy), nil
}

// Verdict is the safety targets': a miss is an error, gate or not.
func (res *Result) Verdict() lab.Verdict {
	if res.Met() {
		return lab.Verdict{}
	}
	return lab.Verdict{Always: true,
		Err: errors.New("chaos: a safety target was missed (lost, shared offsets or two masters in one epoch): see the result")}
}
