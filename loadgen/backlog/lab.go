package backlog

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/samsamq/samsa/internal/lab"
)

// LabKind is the backlog-drain kind of the lab's pipeline (package
// internal/lab); newTarget starts a repeat's cluster in a fresh directory
// under dir, the run's data dir (.benchdata/backlog by default: a real
// disk, where /tmp may be tmpfs).
func LabKind(newTarget func(dir string, to TargetOptions) (Target, error)) lab.Kind {
	return lab.NewKind(filepath.Join(".benchdata", "backlog"), LoadExperiment, func(ctx context.Context, e *Experiment, env lab.Env) (*Result, error) {
		return RunExperiment(ctx, e, Options{Quick: env.Quick, DiskDir: env.DataDir, Progress: env.Progress,
			NewTarget: func(_ context.Context, to TargetOptions) (Target, error) { return newTarget(env.DataDir, to) }})
	})
}

// Verdict is the drain's (unless paced) and the p99's target.
func (r *Result) Verdict() lab.Verdict {
	if len(r.Cells) > 0 {
		return r.cellsVerdict()
	}
	if (r.DrainNA || r.DrainMet) && r.P99Met {
		return lab.Verdict{}
	}
	return lab.Verdict{Err: fmt.Errorf("backlog-drain: target missed (drain %.2f× read, target %.2f×; p99 %.2f× before, target %.2f×)",
		r.Median.DrainRatio, r.DrainTarget, r.MedianP99Ratio, r.P99Target)}
}
