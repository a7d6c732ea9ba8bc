package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PerfGateOptions configure PerfGate.
type PerfGateOptions struct {
	// Repo is the git checkout (default ".").
	Repo string
	// Base is the revision measured against (default HEAD~1).
	Base string
	// HeadBin is the head's binary; empty: built from Repo's working
	// tree (which is HEAD in CI).
	HeadBin string
	// Go is the go command (default "go").
	Go string
	// Dir holds the base's worktree while it builds (Dir/base-src), the
	// built binaries (Dir/bin), the storage runs' data (Dir/data) and
	// each cell's run results (Dir/runs/<cell>); required.
	Dir string
	// Cells (default DefaultGateCells(Dir/data)), Rounds and Threshold
	// are RunGate's.
	Cells     []GateCell
	Rounds    int
	Threshold float64
	// Log gets the builds' and the rounds' progress.
	Log io.Writer
}

// PerfGate is make perf-gate: it builds the base revision in a temporary
// git worktree (Dir/base-src, removed after the build), reads the Perf-Accept trailers of the
// commits after it up to HEAD (with the default base, HEAD's own), and
// runs RunGate with the base's binary as A and the head's as B. When the
// base cannot be had (a shallow clone without it, HEAD the first commit,
// not a git checkout, a base that does not build) it measures nothing
// and returns a SkippedGate saying why: the gate passes, out loud. An
// error means the gate itself could not run (the head does not build, a
// cancelled context).
func PerfGate(ctx context.Context, o PerfGateOptions) (*GateResult, error) {
	if o.Repo == "" {
		o.Repo = "."
	}
	if o.Base == "" {
		o.Base = "HEAD~1"
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Dir == "" {
		return nil, errors.New("perf gate: want a work directory")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			_, _ = fmt.Fprintf(o.Log, format+"\n", args...) // progress only
		}
	}
	head, err := git(ctx, o.Repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return SkippedGate(fmt.Sprintf("%s is not a git checkout with a HEAD commit: no base to build (%v)", o.Repo, err)), nil
	}
	base, err := git(ctx, o.Repo, "rev-parse", "--verify", "--quiet", o.Base+"^{commit}")
	if err != nil {
		return SkippedGate(whyNoBase(ctx, o.Repo, o.Base, head)), nil
	}
	if base == head {
		return SkippedGate(fmt.Sprintf("the base %s is HEAD itself (%s): nothing to compare", o.Base, short(head))), nil
	}
	baseBin := filepath.Join(dir, "bin", "samsa-base")
	start := time.Now()
	logf("perf gate: building the base %s (%s) in a temporary git worktree", o.Base, short(base))
	if err := buildAtRev(ctx, o.Repo, base, o.Go, filepath.Join(dir, "base-src"), baseBin); err != nil {
		return SkippedGate(fmt.Sprintf("the base %s (%s) could not be built: %v", o.Base, short(base), err)), nil
	}
	headBin := o.HeadBin
	if headBin == "" {
		headBin = filepath.Join(dir, "bin", "samsa-head")
		logf("perf gate: building the head from the working tree")
		if err := goBuild(ctx, o.Repo, o.Go, headBin); err != nil {
			return nil, fmt.Errorf("perf gate: the head does not build: %w", err)
		}
	}
	logf("perf gate: built in %s", time.Since(start).Round(100*time.Millisecond))

	var notes []string
	headRev := short(head) + " (HEAD)"
	if st, err := git(ctx, o.Repo, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		headRev = short(head) + " (HEAD + uncommitted changes)"
		notes = append(notes, "the working tree differs from HEAD: B is the working tree's build")
	}
	msgs, err := git(ctx, o.Repo, "log", "--format=%B", base+".."+head)
	if err != nil {
		return nil, fmt.Errorf("perf gate: read the commit messages after the base: %w", err)
	}
	accept, bad := ParseAccepts(msgs)
	for _, b := range bad {
		notes = append(notes, fmt.Sprintf("ignored %q: want Perf-Accept: CELL: REASON", b))
	}
	cells := o.Cells
	if cells == nil {
		cells = DefaultGateCells(filepath.Join(dir, "data"))
	}
	g, err := RunGate(ctx, GateOptions{Base: baseBin, Head: headBin, BaseRev: short(base) + " (" + o.Base + ")", HeadRev: headRev,
		Cells: cells, Rounds: o.Rounds, Threshold: o.Threshold, Accept: accept, Dir: filepath.Join(dir, "runs"), Log: o.Log})
	if err != nil {
		return nil, err
	}
	g.Notes = append(notes, g.Notes...)
	return g, nil
}

// whyNoBase says why rev names no commit in repo.
func whyNoBase(ctx context.Context, repo, rev, head string) string {
	if s, _ := git(ctx, repo, "rev-parse", "--is-shallow-repository"); s == "true" {
		return fmt.Sprintf("the base %s is not in this shallow clone (git fetch --deepen=1, or clone with full history, to gate)", rev)
	}
	if roots, err := git(ctx, repo, "rev-list", "--max-parents=0", "HEAD"); err == nil && strings.Contains(roots, head) {
		return fmt.Sprintf("HEAD (%s) is the first commit: no base %s to compare with", short(head), rev)
	}
	return fmt.Sprintf("the base %s names no commit in this clone", rev)
}

// buildAtRev builds rev's cmd/samsa into out from a detached git
// worktree of repo at src, removed after (and before, if a run that died
// left it). The path is the same every time: the build cache keys a
// package's compilation by its directory (without -trimpath), so a fixed
// path lets the next gate reuse what this one compiled, and -trimpath
// would miss the cache make build filled (the whole standard library
// built again: 6 minutes here against 45 s).
func buildAtRev(ctx context.Context, repo, rev, goCmd, src, out string) error {
	removeWorktree(ctx, repo, src)
	defer removeWorktree(ctx, repo, src)
	if _, err := git(ctx, repo, "worktree", "add", "--detach", "--quiet", src, rev); err != nil {
		return err
	}
	return goBuild(ctx, src, goCmd, out)
}

// removeWorktree removes the worktree at src if there is one, and forgets
// it if its directory is gone.
func removeWorktree(ctx context.Context, repo, src string) {
	ctx = context.WithoutCancel(ctx) // clean up after an interrupt too
	if _, err := os.Stat(src); err == nil {
		if _, err := git(ctx, repo, "worktree", "remove", "--force", src); err != nil {
			_ = os.RemoveAll(src) // not a worktree (any more): a plain directory
		}
	}
	_, _ = git(ctx, repo, "worktree", "prune") // best effort: drops worktrees whose directory is gone
}

// goBuild builds dir's ./cmd/samsa into out.
func goBuild(ctx context.Context, dir, goCmd, out string) error {
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, "./cmd/samsa")
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, lastLines(buf.String(), 5))
	}
	return nil
}

// git runs git in repo and returns its trimmed output.
func git(ctx context.Context, repo string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), lastLines(msg, 3))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
