package metascale

import (
	"context"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
)

// LabKind is the metadata-scale kind of the lab's pipeline (package
// internal/lab); newTarget starts a run's cluster in a fresh directory
// under dir, the run's data dir (.benchdata/metadata by default).
func LabKind(newTarget func(dir string) (Target, error)) lab.Kind {
	return lab.NewKind(filepath.Join(".benchdata", "metadata"), LoadExperiment, func(ctx context.Context, e *Experiment, env lab.Env) (*Result, error) {
		return RunExperiment(ctx, e, Options{Quick: env.Quick, Progress: env.Progress,
			NewTarget: func(context.Context) (Target, error) { return newTarget(env.DataDir) }})
	})
}
