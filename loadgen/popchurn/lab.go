package popchurn

import (
	"context"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
)

// LabKind is the pop-vs-push kind of the lab's pipeline (package
// internal/lab); newTarget starts a mode's cluster in a fresh directory
// under dir, the run's data dir (.benchdata/pop-vs-push by default).
func LabKind(newTarget func(dir string) (Target, error)) lab.Kind {
	return lab.NewKind(filepath.Join(".benchdata", "pop-vs-push"), LoadExperiment, func(ctx context.Context, e *Experiment, env lab.Env) (*Result, error) {
		return RunExperiment(ctx, e, Options{Quick: env.Quick, Seed: env.Seed, Binary: env.Binary, Progress: env.Progress,
			NewTarget: func(context.Context) (Target, error) { return newTarget(env.DataDir) }})
	})
}
