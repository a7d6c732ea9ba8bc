package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The test binary doubles as a stand-in samsa binary: run with
// $SAMSA_STANDIN_MEAN set, it answers "bench ... --json FILE" and
// "loadgen ... --json FILE" by writing {"msgs_per_sec": x} to FILE, x drawn
// ±10% (uniform) around the mean, times 0.75 when its arguments contain
// $SAMSA_STANDIN_SLOW; it fails, as an old binary refusing a flag does,
// when they contain $SAMSA_STANDIN_FAIL. The draw is seeded by
// $SAMSA_STANDIN_SEED and the result file's last two path elements (the
// cell and the round and side), so a gate of stand-ins gives the same
// numbers every time.
func TestMain(m *testing.M) {
	if mean := os.Getenv("SAMSA_STANDIN_MEAN"); mean != "" {
		os.Exit(standIn(mean, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func standIn(meanStr string, args []string) int {
	mean, err := strconv.ParseFloat(meanStr, 64)
	if err != nil || len(args) == 0 || (args[0] != "bench" && args[0] != "loadgen") {
		fmt.Fprintf(os.Stderr, "stand-in: mean %q, called as %q\n", meanStr, args)
		return 2
	}
	joined := " " + strings.Join(args, " ") + " "
	if f := os.Getenv("SAMSA_STANDIN_FAIL"); f != "" && strings.Contains(joined, " "+f+" ") {
		fmt.Fprintf(os.Stderr, "flag provided but not defined: %s\n", f)
		return 2
	}
	if s := os.Getenv("SAMSA_STANDIN_SLOW"); s != "" && strings.Contains(joined, " "+s+" ") {
		mean *= 0.75
	}
	file := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--json" {
			file = args[i+1]
		}
	}
	if file == "" {
		fmt.Fprintln(os.Stderr, "stand-in: no --json")
		return 2
	}
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s/%s/%s", os.Getenv("SAMSA_STANDIN_SEED"), filepath.Base(filepath.Dir(file)), filepath.Base(file))
	rng := rand.New(rand.NewPCG(h.Sum64(), 1))
	b, _ := json.Marshal(map[string]any{"kind": args[0], "msgs_per_sec": noisy(rng, mean)})
	if err := os.WriteFile(file, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// standInBinary writes a script that runs this test binary as a stand-in
// samsa with the given environment (SAMSA_STANDIN_MEAN and the others).
func standInBinary(t *testing.T, name string, env ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	script := "#!/bin/sh\nexec env " + strings.Join(env, " ") + " '" + self + "' \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func runStandInGate(t *testing.T, base, head string, accept map[string]string) (*GateResult, string) {
	t.Helper()
	g, err := RunGate(context.Background(), GateOptions{Base: base, Head: head, BaseRev: "base", HeadRev: "head",
		Cells: DefaultGateCells(t.TempDir()), Accept: accept})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := g.Print(&out); err != nil {
		t.Fatal(err)
	}
	return g, out.String()
}

// TestGateCatchesSlowerCell: a head whose storage-sync-w64 runs are 25%
// slower fails the gate, naming that cell and no other; three seeds, every
// one fails the same way.
func TestGateCatchesSlowerCell(t *testing.T) {
	for seed := 1; seed <= 3; seed++ {
		s := fmt.Sprintf("SAMSA_STANDIN_SEED=%d", seed)
		base := standInBinary(t, "base", "SAMSA_STANDIN_MEAN=10000", s)
		head := standInBinary(t, "head", "SAMSA_STANDIN_MEAN=10000", s, "SAMSA_STANDIN_SLOW='--writers 64'")
		g, out := runStandInGate(t, base, head, nil)
		if f := g.Failed(); len(f) != 1 || f[0] != "storage-sync-w64" || g.Err() == nil {
			t.Fatalf("seed %d: failed %v, want storage-sync-w64 alone:\n%s", seed, f, out)
		}
		if !strings.Contains(out, "perf gate: FAILED: storage-sync-w64") || !strings.Contains(out, "95% CI") {
			t.Fatalf("seed %d: the table does not say it:\n%s", seed, out)
		}
		if seed == 1 {
			t.Logf("\n%s", out)
		}
	}
}

// TestGateSameBinaryPasses: the same stand-in as base and head passes,
// for every one of three seeds.
func TestGateSameBinaryPasses(t *testing.T) {
	for seed := 1; seed <= 3; seed++ {
		bin := standInBinary(t, "same", "SAMSA_STANDIN_MEAN=10000", fmt.Sprintf("SAMSA_STANDIN_SEED=%d", seed))
		g, out := runStandInGate(t, bin, bin, nil)
		if g.Err() != nil || len(g.Rows) != 3 || !strings.HasSuffix(out, "perf gate: passed\n") {
			t.Fatalf("seed %d: %v:\n%s", seed, g.Err(), out)
		}
		for _, r := range g.Rows {
			if r.Result == nil || r.Result.Ratio.N != DefaultGateRounds {
				t.Fatalf("seed %d: row %+v", seed, r)
			}
		}
	}
}

// TestGateAccepted: a Perf-Accept trailer naming the slower cell turns
// its failure into "accepted", printed with its reason; the gate passes.
func TestGateAccepted(t *testing.T) {
	base := standInBinary(t, "base", "SAMSA_STANDIN_MEAN=10000")
	head := standInBinary(t, "head", "SAMSA_STANDIN_MEAN=10000", "SAMSA_STANDIN_SLOW='--writers 64'")
	accept, bad := ParseAccepts("storage: fsync each batch\n\nPerf-Accept: storage-sync-w64: fsync per batch is the durability fix\n")
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	g, out := runStandInGate(t, base, head, accept)
	if g.Err() != nil || !strings.Contains(out, "accepted: storage-sync-w64 (accepted): fsync per batch is the durability fix") ||
		!strings.HasSuffix(out, "perf gate: passed\n") {
		t.Fatalf("%v:\n%s", g.Err(), out)
	}
}

// TestGateBaseOrHeadCannotRun: a base that refuses a cell's flags leaves
// that cell "no base" and the gate passes, saying why; a head that
// refuses them fails the gate.
func TestGateBaseOrHeadCannotRun(t *testing.T) {
	ok := standInBinary(t, "ok", "SAMSA_STANDIN_MEAN=10000")
	old := standInBinary(t, "old", "SAMSA_STANDIN_MEAN=10000", "SAMSA_STANDIN_FAIL=loadgen")
	g, out := runStandInGate(t, old, ok, nil)
	if g.Err() != nil || g.Rows[2].Verdict != GateNoBase || !strings.Contains(out, "e2e-produce: the base binary could not run it") {
		t.Fatalf("base refusing loadgen: %v:\n%s", g.Err(), out)
	}
	g, out = runStandInGate(t, ok, old, nil)
	if f := g.Failed(); len(f) != 1 || f[0] != "e2e-produce" || g.Rows[2].Verdict != GateError {
		t.Fatalf("head refusing loadgen: failed %v:\n%s", f, out)
	}
}

func TestParseAccepts(t *testing.T) {
	msg := `storage: fsync per batch

Body text mentioning Perf-Accept in passing.

Perf-Accept: storage-sync-w64: fsync per batch is the durability fix
perf-accept:e2e-produce: the wire now checks CRCs: both ends
Perf-Accept: no reason here
Perf-Accept: : no cell
`
	accept, bad := ParseAccepts(msg)
	if len(accept) != 2 || accept["storage-sync-w64"] != "fsync per batch is the durability fix" ||
		accept["e2e-produce"] != "the wire now checks CRCs: both ends" {
		t.Fatalf("accepted %q", accept)
	}
	if len(bad) != 2 {
		t.Fatalf("bad %q", bad)
	}
}

func TestSkippedGatePasses(t *testing.T) {
	g := SkippedGate("HEAD~1 is not in this shallow clone")
	var out strings.Builder
	if err := g.Print(&out); err != nil {
		t.Fatal(err)
	}
	if g.Err() != nil || out.String() != "perf gate: SKIPPED, passing: HEAD~1 is not in this shallow clone\n" {
		t.Fatalf("%v: %q", g.Err(), out.String())
	}
}
