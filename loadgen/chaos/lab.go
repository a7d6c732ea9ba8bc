package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
)

// labDir is where a run's data and logs go by default.
var labDir = filepath.Join(".benchdata", "chaos")

// LabKind is the chaos kind ("kind": "chaos") of the lab's pipeline
// (package internal/lab).
func LabKind() lab.Kind {
	return lab.NewKind(labDir, LoadExperiment, func(ctx context.Context, e *Experiment, env lab.Env) (*Result, error) {
		res, err := runLab(ctx, e.Options(env.Binary, env.DataDir, env.Seed, env.Quick), env)
		if err != nil {
			return nil, err
		}
		res.Experiment, res.Description, res.Quick = e.Name, e.Description, env.Quick
		return res, nil
	})
}

// OptionsExperiment is a run of o (samsa chaos's flags) as an experiment
// of the pipeline: the Env's binary, data dir and seed replace o's.
func OptionsExperiment(o Options) lab.Experiment {
	return lab.NewExperiment(labDir, func(ctx context.Context, env lab.Env) (*Result, error) { return runLab(ctx, o, env) })
}

// runLab runs o with the Env's binary, data dir, seed and progress.
func runLab(ctx context.Context, o Options, env lab.Env) (*Result, error) {
	if env.Binary == "" {
		return nil, errors.New("chaos: no samsa binary to run")
	}
	o.Binary, o.Dir, o.Seed, o.Progress = env.Binary, env.DataDir, env.Seed, env.Progress
	return Run(ctx, o)
}

// Print writes the tables, the result file's path and where the logs
// are.
func (res *Result) Print(w io.Writer, path string) error {
	logs := ""
	if res.Dir != "" {
		logs = fmt.Sprintf("logs: %s (each cycle's fault time is in the result)\n", res.Dir)
	}
	_, err := fmt.Fprintf(w, "%s\nresult: %s\n%s", res.Markdown(), path, logs)
	return err
}

// Verdict is the safety targets': a miss is an error, gate or not.
func (res *Result) Verdict() lab.Verdict {
	if res.Met() {
		return lab.Verdict{}
	}
	return lab.Verdict{Always: true,
		Err: errors.New("chaos: a safety target was missed (lost, shared offsets or two masters in one epoch): see the result")}
}
