package durability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/samsamq/samsa/internal/lab"
)

// Lab is the kill loops' kind of the lab's pipeline (package
// internal/lab), for both Kind and ReplicationKind.
type Lab struct{}

// Load reads and checks a durability-kill or replication-durability
// experiment file.
func (Lab) Load(path string) (lab.Experiment, error) {
	e, err := LoadExperiment(path)
	if err != nil {
		return nil, err
	}
	return labExperiment{e}, nil
}

// Read reads a kill loop's result file.
func (Lab) Read(path string) (lab.Result, error) {
	r, err := ReadResult(path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type labExperiment struct{ e *Experiment }

// DataDir is .benchdata/durability: a real disk (a tmpfs /tmp has no
// O_DIRECT).
func (labExperiment) DataDir() string { return filepath.Join(".benchdata", "durability") }

func (x labExperiment) Run(ctx context.Context, env lab.Env) (lab.Result, error) {
	if env.Binary == "" {
		return nil, errors.New("durability: no samsa binary to run")
	}
	r, err := RunExperiment(ctx, x.e, RunOptions{Binary: env.Binary, Dir: env.DataDir, Quick: env.Quick,
		Seed: env.Seed, Progress: env.Progress})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Print writes the tables and the result file's path.
func (r *ExperimentResult) Print(w io.Writer, path string) error {
	return lab.Print(w, r.Markdown(), path)
}

// Section is the result's PERFORMANCE.md section.
func (r *ExperimentResult) Section(path string, o lab.SectionOptions) (string, error) {
	return lab.Section(r.Markdown(), &r.Header, path, o.RenderedBy), nil
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
