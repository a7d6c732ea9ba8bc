package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/durability"
)

// durabilityRun is how `samsa loadgen --experiment` runs a durability-kill
// experiment: the cells run this very binary as name server and broker.
type durabilityRun struct {
	path, outDir, perfFile, command string
	dataDir                         string // parent of the cells' data dirs; default .benchdata/durability
	quick, gate                     bool
	seed                            uint64
}

func (d durabilityRun) run(ctx context.Context) error {
	e, err := durability.LoadExperiment(d.path)
	if err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("durability: the samsa binary to run: %w", err)
	}
	dir := d.dataDir
	if dir == "" {
		dir = filepath.Join(".benchdata", "durability") // a real disk: /tmp may be tmpfs (no O_DIRECT)
	}
	// The machine (and the checkout's commit) before the run: a long run
	// may outlive the checkout it was built from.
	m := resultfile.CollectMachine(dir)
	res, err := durability.RunExperiment(ctx, e, durability.RunOptions{Binary: bin, Dir: dir, Quick: d.quick,
		Seed: d.seed, Progress: os.Stdout})
	if err != nil {
		return err
	}
	res.Command = d.command
	res.Machine = m
	p, err := durability.WriteResult(d.outDir, res)
	if err != nil {
		return err
	}
	fmt.Println(res.Markdown())
	fmt.Printf("result: %s\n", p)
	if d.perfFile != "" {
		if err := resultfile.UpdateSections(d.perfFile, []string{res.Experiment},
			map[string]string{res.Experiment: durabilitySection(res, p)}); err != nil {
			return err
		}
	}
	if missed := res.Missed(); len(missed) > 0 {
		fmt.Printf("durability: target missed by %s\n", strings.Join(missed, ", "))
		if d.gate {
			return fmt.Errorf("%d of %d cells missed their target", len(missed), len(res.Cells))
		}
	}
	return nil
}

// durabilitySection is a durability result's PERFORMANCE.md section.
func durabilitySection(r *durability.ExperimentResult, path string) string {
	return fmt.Sprintf("%s\nMachine: %s. Result file: `%s`.\n", r.Markdown(), machineString(r.Machine), path)
}
