package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBench writes a stand-in for a samsa binary: it appends its name to
// calls, checks it was called as "bench storage ... --json FILE" or
// "loadgen ... --json FILE" and writes {"msgs_per_sec": rate, ...} to
// FILE (with rate/10 as send_latency_us.p99).
func fakeBench(t *testing.T, dir, name, rate, calls string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	script := `#!/bin/sh
echo ` + name + ` >> ` + calls + `
{ [ "$1" = bench ] && [ "$2" = storage ]; } || [ "$1" = loadgen ] || { echo "called as $*" >&2; exit 2; }
while [ $# -gt 1 ]; do
  if [ "$1" = --json ]; then printf '{"kind":"storage","msgs_per_sec":%s,"send_latency_us":{"p99":%s}}\n' ` + rate + ` $((` + rate + `/10)) > "$2"; exit 0; fi
  shift
done
echo "no --json" >&2
exit 2
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunABAlternatesAndTakesRatios(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	a := fakeBench(t, dir, "a", "1000", calls)
	b := fakeBench(t, dir, "b", "900", calls)
	var log strings.Builder
	res, err := RunAB(context.Background(), ABOptions{A: a, B: b, Rounds: 4, Args: []string{"storage", "--writers", "1"},
		Dir: filepath.Join(dir, "runs"), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if order := strings.Fields(string(got)); strings.Join(order, "") != "abbaabba" {
		t.Fatalf("runs in order %v, want A-B-B-A rounds", order)
	}
	if len(res.Rounds) != 4 || res.Ratio.Median != 0.9 || res.Ratio.Min != 0.9 || res.AValues.Median != 1000 || res.BValues.Median != 900 {
		t.Fatalf("result %+v", res)
	}
	if res.Rounds[1].First != "b" || res.Rounds[0].AFile == "" {
		t.Fatalf("rounds %+v", res.Rounds)
	}
	if !strings.Contains(res.Summary(), "median 0.900×") || !strings.Contains(log.String(), "round 4/4: B/A 0.900×") {
		t.Fatalf("summary %q, log %q", res.Summary(), log.String())
	}
}

func TestRunABRefuses(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	a := fakeBench(t, dir, "a", "1000", calls)
	zero := fakeBench(t, dir, "zero", "0", calls)
	for _, c := range []struct {
		name string
		o    ABOptions
		want string
	}{
		{"no B", ABOptions{A: a, Args: []string{"storage"}}, "two binaries"},
		{"no subcommand", ABOptions{A: a, B: a}, "want the bench subcommand"},
		{"its own --json", ABOptions{A: a, B: a, Args: []string{"storage", "--json", "x"}}, "--json is RunAB's"},
		{"a failing run", ABOptions{A: a, B: a, Args: []string{"disk"}}, "called as bench disk"},
		{"a missing metric", ABOptions{A: a, B: a, Args: []string{"storage"}, Metric: "mb_per_sec"}, `no field "mb_per_sec"`},
		{"a zero metric", ABOptions{A: a, B: zero, Args: []string{"storage"}}, "nothing to compare"},
		{"a path through a number", ABOptions{A: a, B: a, Args: []string{"storage"}, Metric: "msgs_per_sec.p99"}, `"msgs_per_sec" is not an object`},
		{"another command", ABOptions{A: a, B: a, Command: "produce", Args: []string{"--topic", "x"}}, `command "produce"`},
		{"a loadgen experiment", ABOptions{A: a, B: a, Command: "loadgen", Args: []string{"--experiment", "x.json"}}, "one workload's flags"},
	} {
		_, err := RunAB(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestRunABLoadgen: --cmd loadgen runs "BIN loadgen FLAGS --json FILE"
// (no bench subcommand needed), and a dotted metric reads a nested field.
func TestRunABLoadgen(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	a := fakeBench(t, dir, "a", "1000", calls)
	b := fakeBench(t, dir, "b", "1100", calls)
	res, err := RunAB(context.Background(), ABOptions{A: a, B: b, Rounds: 2, Command: "loadgen",
		Args: []string{"--duration", "3s"}, Metric: "send_latency_us.p99"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Command != "loadgen" || res.AValues.Median != 100 || res.BValues.Median != 110 || res.Ratio.Median != 1.1 {
		t.Fatalf("result %+v", res)
	}
	if _, err := RunAB(context.Background(), ABOptions{A: a, B: b, Rounds: 1, Command: "loadgen"}); err != nil {
		t.Fatalf("loadgen with no flags (all defaults): %v", err)
	}
}
