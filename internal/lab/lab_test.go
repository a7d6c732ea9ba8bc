package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
)

// fakeKind runs experiment files {"kind": "fake", "name": ..., "miss":
// ..., "always": ...} whose result is a Header and the env it saw.
type fakeKind struct{}

type fakeExperiment struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Miss   bool   `json:"miss"`
	Always bool   `json:"always"`
	Start  time.Time
}

type fakeResult struct {
	resultfile.Header
	Quick  bool   `json:"env_quick"`
	Seed   uint64 `json:"env_seed"`
	Dir    string `json:"env_dir"`
	Miss   bool   `json:"miss"`
	Always bool   `json:"always"`
}

func (fakeKind) Load(path string) (Experiment, error) {
	var e fakeExperiment
	if err := resultfile.ReadStrict(path, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

func (fakeKind) Read(path string) (Result, error) {
	r, err := resultfile.Read[fakeResult](path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (e *fakeExperiment) DataDir() string { return "" }

func (e *fakeExperiment) Run(_ context.Context, env Env) (Result, error) {
	if e.Name == "fails" {
		return nil, errors.New("the run failed")
	}
	if env.Machine == nil {
		return nil, errors.New("no machine before the run")
	}
	return &fakeResult{Header: resultfile.Header{Experiment: e.Name, Kind: "fake", Start: e.Start},
		Quick: env.Quick, Seed: env.Seed, Dir: env.DataDir, Miss: e.Miss, Always: e.Always}, nil
}

func (r *fakeResult) Markdown() string { return "### " + r.Experiment }

func (r *fakeResult) Verdict() Verdict {
	if !r.Miss {
		return Verdict{}
	}
	return Verdict{Missed: "fake: target missed", Err: errors.New("fake missed"), Always: r.Always}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// TestRunWritesRecordsPrintsAndReports: the pipeline records the machine
// before the run, the command after it, names the result file by host
// and start, prints the result and rewrites its section.
func TestRunWritesRecordsPrintsAndReports(t *testing.T) {
	dir := t.TempDir()
	exp := writeFile(t, dir, "x.json", `{"kind": "fake", "name": "x"}`)
	perf := writeFile(t, dir, "P.md", "# hand\n")
	var out bytes.Buffer
	kinds := Kinds{"fake": fakeKind{}}
	path, err := kinds.Run(context.Background(), exp, Options{
		Env: Env{Quick: true, Seed: 7, DataDir: filepath.Join(dir, "data"), Command: "samsa loadgen --experiment x.json"},
		Out: filepath.Join(dir, "results"), Performance: perf, Stdout: &out})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "results", "x"), filepath.Dir(path))
	require.DirExists(t, filepath.Join(dir, "data"), "the data dir is made before the machine is read there")

	back, err := fakeKind{}.Read(path)
	require.NoError(t, err)
	r := back.(*fakeResult)
	require.Equal(t, "samsa loadgen --experiment x.json", r.Command)
	require.NotNil(t, r.Machine)
	require.NotEmpty(t, r.Machine.GoVersion)
	require.True(t, strings.HasPrefix(filepath.Base(path), r.Machine.Hostname+"-"))
	require.True(t, r.Quick)
	require.EqualValues(t, 7, r.Seed)

	require.Equal(t, "### x\nresult: "+path+"\n", out.String())
	doc, err := os.ReadFile(perf)
	require.NoError(t, err)
	require.Contains(t, string(doc), "<!-- BEGIN GENERATED: x -->\n### x\nMachine: "+r.Machine.String()+". Result file: `"+path+"`.\n")
	require.True(t, strings.HasPrefix(string(doc), "# hand\n"))
}

// TestGate: a miss is printed; it is the run's error with the gate on,
// or when the kind says always; the result file is written either way.
func TestGate(t *testing.T) {
	dir := t.TempDir()
	kinds := Kinds{"fake": fakeKind{}}
	run := func(body string, gate bool) (string, string, error) {
		var out bytes.Buffer
		p, err := kinds.Run(context.Background(), writeFile(t, dir, "g.json", body),
			Options{Out: filepath.Join(dir, "results"), Gate: gate, Stdout: &out})
		return p, out.String(), err
	}
	p, out, err := run(`{"kind": "fake", "name": "g", "miss": true}`, false)
	require.NoError(t, err)
	require.FileExists(t, p)
	require.Contains(t, out, "fake: target missed\n")
	p, _, err = run(`{"kind": "fake", "name": "g", "miss": true}`, true)
	require.EqualError(t, err, "fake missed")
	require.FileExists(t, p)
	_, _, err = run(`{"kind": "fake", "name": "g", "miss": true, "always": true}`, false)
	require.EqualError(t, err, "fake missed")
	_, out, err = run(`{"kind": "fake", "name": "g"}`, true)
	require.NoError(t, err)
	require.NotContains(t, out, "missed")

	p, _, err = run(`{"kind": "fake", "name": "fails"}`, true)
	require.EqualError(t, err, "the run failed")
	require.Empty(t, p)
	_, _, err = run(`{"kind": "other", "name": "g"}`, false)
	require.ErrorContains(t, err, `kind "other" is none of the lab's (fake)`)
	_, _, err = run(`{"kind": "fake", "name": "g", "typo": 1}`, false)
	require.ErrorContains(t, err, "typo")
}

// TestRunExperimentOutDir: OutDir is the result file's directory itself.
func TestRunExperimentOutDir(t *testing.T) {
	dir := t.TempDir()
	p, err := RunExperiment(context.Background(), &fakeExperiment{Name: "c"},
		Options{OutDir: filepath.Join(dir, "results", "chaos"), Stdout: io.Discard})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "results", "chaos"), filepath.Dir(p))
}

// TestReportTakesEachExperimentsNewest renders the newest result of
// each experiment, in the order the experiments first appear, and
// rewrites their sections.
func TestReportTakesEachExperimentsNewest(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, start time.Time) string {
		b, err := json.Marshal(fakeResult{Header: resultfile.Header{Experiment: name, Kind: "fake", Start: start}})
		require.NoError(t, err)
		return writeFile(t, dir, name+start.Format("150405")+".json", string(b))
	}
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	a1, b1, a2 := write("a", t0), write("b", t0), write("a", t0.Add(time.Hour))
	perf := filepath.Join(dir, "P.md")
	kinds := Kinds{"fake": fakeKind{}}
	order, sections, err := kinds.Report([]string{a2, b1, a1}, ReportOptions{Out: perf, Command: "samsa bench report", HTML: true})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, order)
	require.Contains(t, sections["a"], "Result file: `"+a2+"`.\n") // the newest a
	require.Contains(t, sections["a"], "Machine: not recorded")
	require.Contains(t, sections["a"], "\nRendered by `samsa bench report`.\n")
	doc, err := os.ReadFile(perf)
	require.NoError(t, err)
	require.Contains(t, string(doc), sections["b"])
	require.FileExists(t, HTMLPath(a2))
	require.NoFileExists(t, HTMLPath(a1))
}
