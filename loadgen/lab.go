package loadgen

import (
	"context"
	"fmt"
	"strings"

	"github.com/samsamq/samsa/internal/lab"
)

// LabKind is the end-to-end kind ("kind": "e2e") of the lab's pipeline
// (package internal/lab); newDriver makes each run's driver and the
// cluster it needs. A run keeps no data of its own: each cell's cluster
// uses a temp dir unless the command line names a directory.
func LabKind(newDriver DriverFactory) lab.Kind {
	return lab.NewKind("", LoadExperiment, func(ctx context.Context, e *Experiment, env lab.Env) (*ExperimentResult, error) {
		return RunExperiment(ctx, e, env.Quick, newDriver, env.Progress)
	})
}

// Section is the result's PERFORMANCE.md section: the tables, the charts,
// the machine and the result file.
func (r *ExperimentResult) Section(path string, o lab.SectionOptions) (string, error) {
	var charts []Chart
	if !o.NoCharts {
		var err error
		if charts, err = r.WriteCharts(o.ChartDir, o.LinkBase); err != nil {
			return "", err
		}
	}
	return lab.Section(r.MarkdownCharts(charts), &r.Header, path, o.RenderedBy), nil
}

// Verdict names the comparisons with a target that missed it (or could
// not be evaluated).
func (r *ExperimentResult) Verdict() lab.Verdict {
	missed := r.MissedTargets()
	if len(missed) == 0 {
		return lab.Verdict{}
	}
	return lab.Verdict{Missed: "loadgen: target missed: " + strings.Join(missed, "; "),
		Err: fmt.Errorf("%d of the comparisons with a target missed it", len(missed))}
}
