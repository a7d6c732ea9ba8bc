package durability

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/samsamq/samsa/internal/lab"
)

// LabKind is the kill loops' kind of the lab's pipeline (package
// internal/lab), for both Kind and ReplicationKind. A run's data goes to
// .benchdata/durability by default: a real disk (a tmpfs /tmp has no
// O_DIRECT).
func LabKind() lab.Kind {
	return lab.NewKind(filepath.Join(".benchdata", "durability"), LoadExperiment,
		func(ctx context.Context, e *Experiment, env lab.Env) (*ExperimentResult, error) {
			if env.Binary == "" {
				return nil, errors.New("durability: no samsa binary to run")
			}
			return RunExperiment(ctx, e, RunOptions{Binary: env.Binary, Dir: env.DataDir, Quick: env.Quick,
				Seed: env.Seed, Progress: env.Progress})
		})
}

// Verdict names the cells that failed or missed their target.
func (r *ExperimentResult) Verdict() lab.Verdict {
	missed := r.Missed()
	if len(missed) == 0 {
		return lab.Verdict{}
	}
	return lab.Verdict{Missed: "durability: target missed by " + strings.Join(missed, ", "),
		Err: fmt.Errorf("%d of %d cells missed their target", len(missed), len(r.Cells))}
}
