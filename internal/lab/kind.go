package lab

import (
	"context"

	"github.com/samsamq/samsa/internal/resultfile"
)

// NewKind is the Kind of experiments of type E that load reads and
// checks and run runs, in dataDir when the command line names no
// directory, and whose results, of type R, read back from their files as
// they were written.
func NewKind[E any, R any, PR interface {
	*R
	Result
}](dataDir string, load func(path string) (E, error), run func(ctx context.Context, e E, env Env) (PR, error)) Kind {
	return funcKind[E, R, PR]{dataDir: dataDir, load: load, run: run}
}

type funcKind[E any, R any, PR interface {
	*R
	Result
}] struct {
	dataDir string
	load    func(path string) (E, error)
	run     func(ctx context.Context, e E, env Env) (PR, error)
}

func (k funcKind[E, R, PR]) Load(path string) (Experiment, error) {
	e, err := k.load(path)
	if err != nil {
		return nil, err
	}
	return NewExperiment(k.dataDir, func(ctx context.Context, env Env) (PR, error) { return k.run(ctx, e, env) }), nil
}

func (k funcKind[E, R, PR]) Read(path string) (Result, error) {
	r, err := resultfile.Read[R](path)
	if err != nil {
		return nil, err
	}
	return PR(r), nil
}

// NewExperiment is the Experiment that run runs, in dataDir when the
// command line names no directory: a run made from a command line's
// flags rather than a file.
func NewExperiment[PR Result](dataDir string, run func(ctx context.Context, env Env) (PR, error)) Experiment {
	return funcExperiment[PR]{dataDir: dataDir, run: run}
}

type funcExperiment[PR Result] struct {
	dataDir string
	run     func(ctx context.Context, env Env) (PR, error)
}

func (x funcExperiment[PR]) DataDir() string { return x.dataDir }

func (x funcExperiment[PR]) Run(ctx context.Context, env Env) (Result, error) {
	r, err := x.run(ctx, env)
	if err != nil {
		return nil, err // not r: a nil pointer in a Result is not a nil Result
	}
	return r, nil
}
