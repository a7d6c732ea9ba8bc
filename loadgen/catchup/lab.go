package catchup

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
)

// LabKind is the replication-catchup kind of the lab's pipeline (package
// internal/lab); newTarget starts a repeat's master in a fresh directory
// under dir, the run's data dir (.benchdata/catchup by default: a real
// disk, where /tmp may be tmpfs).
func LabKind(newTarget func(dir string) (Target, error)) lab.Kind {
	return lab.NewKind(filepath.Join(".benchdata", "catchup"), LoadExperiment, func(ctx context.Context, e *Experiment, env lab.Env) (*Result, error) {
		return RunExperiment(ctx, e, Options{Quick: env.Quick, DiskDir: env.DataDir, Progress: env.Progress,
			NewTarget: func(context.Context) (Target, error) { return newTarget(env.DataDir) }})
	})
}

// Verdict is the median catch-up ratio's target.
func (r *Result) Verdict() lab.Verdict {
	if r.Met {
		return lab.Verdict{}
	}
	return lab.Verdict{Err: fmt.Errorf("replication-catchup: target missed (catch-up %.2f× disk, target %.2f×)", r.Median.Ratio, r.Target)}
}
