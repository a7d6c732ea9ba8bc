package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/samsamq/samsa/bench"
)

func init() {
	benchSubs = append(benchSubs, struct {
		name, usage string
		run         func(args []string) error
	}{"gate", "gate [--base HEAD~1] [--head-bin BINARY] [--rounds N] [--threshold 0.90] [--dir .benchdata/gate] [--json FILE]: the performance gate (make perf-gate): the base commit built in a temporary git worktree against the head, A/B on storage pwrite async 1 writer, sync 64 writers and loadgen's e2e produce path; fails only when a cell's whole 95% interval of B/A is below the threshold and no \"Perf-Accept: CELL: REASON\" trailer after the base names it", benchGate})
}

// benchGate is samsa bench gate (make perf-gate): the base commit's
// binary against the head's, A/B, on the gate's cells.
func benchGate(args []string) error {
	fs := flag.NewFlagSet("bench gate", flag.ContinueOnError)
	var o bench.PerfGateOptions
	var jsonPath string
	fs.StringVar(&o.Base, "base", "HEAD~1", "the revision measured against (built in a temporary git worktree)")
	fs.StringVar(&o.HeadBin, "head-bin", "", "the head's binary (default: built from the working tree)")
	fs.StringVar(&o.Repo, "repo", ".", "the git checkout")
	fs.StringVar(&o.Go, "go", "go", "the go command that builds the base")
	fs.StringVar(&o.Dir, "dir", ".benchdata/gate", "work directory: the base's worktree while it builds, binaries, storage data, each cell's runs")
	fs.IntVar(&o.Rounds, "rounds", 0, fmt.Sprintf("A-B-B-A rounds per cell (0: each cell's, %d)", bench.DefaultGateRounds))
	fs.Float64Var(&o.Threshold, "threshold", bench.DefaultABThreshold, "a cell regresses when the whole 95% bootstrap interval of its median B/A is below this")
	fs.StringVar(&jsonPath, "json", "", "write the gate's rows (every round) as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench gate: unexpected arguments %q", fs.Args())
	}
	o.Log = os.Stdout
	ctx, cancel := signalContext()
	defer cancel()
	start := time.Now()
	g, err := bench.PerfGate(ctx, o)
	if err != nil {
		return err
	}
	fmt.Println()
	if err := g.Print(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("perf gate: took %s\n", time.Since(start).Round(time.Second))
	return errors.Join(writeJSONFile(jsonPath, g), g.Err())
}
