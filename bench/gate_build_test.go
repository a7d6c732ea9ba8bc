package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// standInMain is a samsa stand-in's source: it writes {"msgs_per_sec":
// RATE} where --json says.
const standInMain = `package main

import "os"

func main() {
	for i := 1; i+1 < len(os.Args); i++ {
		if os.Args[i] == "--json" {
			if err := os.WriteFile(os.Args[i+1], []byte("{\"msgs_per_sec\": RATE}"), 0o644); err != nil {
				os.Exit(1)
			}
			return
		}
	}
	os.Exit(2)
}
`

// gitRepo makes a git repository in a temporary directory and returns a
// function that writes a file set and commits it with a message.
func gitRepo(t *testing.T) (string, func(msg string, files map[string]string)) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
		"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"} {
		t.Setenv(k, v)
	}
	repo := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v: %s", args, err, out)
		}
	}
	run("init", "--quiet")
	return repo, func(msg string, files map[string]string) {
		t.Helper()
		for name, body := range files {
			p := filepath.Join(repo, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run("add", "-A")
		run("commit", "--quiet", "-m", msg)
	}
}

func standInModule(rate string) map[string]string {
	return map[string]string{"go.mod": "module example.com/standin\n\ngo 1.21\n",
		"cmd/samsa/main.go": strings.Replace(standInMain, "RATE", rate, 1)}
}

var tinyCells = []GateCell{
	{Name: "storage-async-w1", Command: "bench", Args: []string{"storage"}},
	{Name: "storage-sync-w64", Command: "bench", Args: []string{"storage", "--flush", "sync"}},
}

// TestPerfGateBuildsTheBase: the base commit is built in a temporary
// worktree (gone after) and the head from the working tree; a head 30%
// slower fails every cell but the one its commit's Perf-Accept trailer
// names, printed with its reason.
func TestPerfGateBuildsTheBase(t *testing.T) {
	repo, commit := gitRepo(t)
	commit("stand-in: 1000 msgs/s", standInModule("1000"))
	commit("stand-in: slower\n\nPerf-Accept: storage-sync-w64: the stand-in pays for durability\n", standInModule("700"))
	var log strings.Builder
	g, err := PerfGate(context.Background(), PerfGateOptions{Repo: repo, Dir: t.TempDir(), Cells: tinyCells, Rounds: 2, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := g.Print(&out); err != nil {
		t.Fatal(err)
	}
	if f := g.Failed(); len(f) != 1 || f[0] != "storage-async-w1" || g.Rows[1].Verdict != GateAccepted ||
		!strings.Contains(out.String(), "accepted: storage-sync-w64 (accepted): the stand-in pays for durability") ||
		g.Rows[0].Result.Ratio.Median != 0.7 {
		t.Fatalf("failed %v:\n%s\nlog:\n%s", f, out.String(), log.String())
	}
	if !strings.Contains(g.BaseRev, "(HEAD~1)") || !strings.Contains(g.HeadRev, "(HEAD)") {
		t.Fatalf("revisions %q, %q", g.BaseRev, g.HeadRev)
	}
	wt, err := git(context.Background(), repo, "worktree", "list", "--porcelain")
	if err != nil || strings.Count(wt, "worktree ") != 1 {
		t.Fatalf("worktrees left: %v\n%s", err, wt)
	}
}

// TestPerfGateWithoutBase: no base to build (the first commit, a shallow
// clone, a base that does not compile, no git checkout) skips the gate,
// saying why, and passes.
func TestPerfGateWithoutBase(t *testing.T) {
	repo, commit := gitRepo(t)
	commit("first", standInModule("1000"))
	check := func(name string, o PerfGateOptions, want string) {
		t.Helper()
		o.Cells, o.Dir = tinyCells, t.TempDir()
		g, err := PerfGate(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out strings.Builder
		if err := g.Print(&out); err != nil {
			t.Fatal(err)
		}
		if g.Err() != nil || !strings.HasPrefix(out.String(), "perf gate: SKIPPED, passing: ") || !strings.Contains(out.String(), want) {
			t.Fatalf("%s: %v: %q, want it to say %q", name, g.Err(), out.String(), want)
		}
	}
	check("first commit", PerfGateOptions{Repo: repo}, "is the first commit")
	check("base is HEAD", PerfGateOptions{Repo: repo, Base: "HEAD"}, "is HEAD itself")
	check("not git", PerfGateOptions{Repo: t.TempDir()}, "is not a git checkout")

	commit("second", standInModule("900"))
	shallow := filepath.Join(t.TempDir(), "shallow")
	if out, err := exec.Command("git", "clone", "--quiet", "--depth", "1", "file://"+repo, shallow).CombinedOutput(); err != nil {
		t.Fatalf("shallow clone: %v: %s", err, out)
	}
	check("shallow clone", PerfGateOptions{Repo: shallow}, "is not in this shallow clone")
	check("unknown base", PerfGateOptions{Repo: repo, Base: "no-such-branch"}, "names no commit")

	commit("third", map[string]string{"cmd/samsa/main.go": "package main\n\nfunc main() { undefined() }\n"})
	commit("fourth", standInModule("900"))
	check("base does not build", PerfGateOptions{Repo: repo}, "could not be built: go build")
}
