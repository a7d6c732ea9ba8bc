package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Kind runs and renders the experiments of one kind.
type Kind interface {
	// Load reads and checks an experiment file of the kind.
	Load(path string) (Experiment, error)
	// Read reads a result file of the kind.
	Read(path string) (Result, error)
}

// Kinds is the registry: a file's "kind" → its Kind.
type Kinds map[string]Kind

// Experiment is an experiment file, loaded and checked.
type Experiment interface {
	// DataDir is where a run keeps its data when the command line names
	// no directory ("": the temp dir).
	DataDir() string
	// Run runs the experiment and returns its result; the pipeline fills
	// in the command and the machine.
	Run(ctx context.Context, env Env) (Result, error)
}

// Env is what a run takes from the command line.
type Env struct {
	// Quick runs the experiment's quick form.
	Quick bool
	// Seed seeds a seeded kind (kill moments, fault order); 0: the
	// file's, or the clock.
	Seed uint64
	// DataDir is the run's data dir (Experiment.DataDir when the command
	// line named none).
	DataDir string
	// Binary is the samsa binary the real-process kinds start.
	Binary string
	// Command is the command line, recorded in the result.
	Command string
	// Machine is the machine the pipeline recorded before the run.
	Machine *resultfile.Machine
	// Progress gets the run's progress lines (default io.Discard).
	Progress io.Writer
}

// Result is a run's result, as its result file holds it.
type Result interface {
	// Head is the result file's header (resultfile.Header.Head, when
	// the result embeds one).
	Head() *resultfile.Header
	// Markdown is the result's tables: what a run prints, and its
	// PERFORMANCE.md section before the machine and the result file.
	Markdown() string
	// Verdict measures the result against its targets.
	Verdict() Verdict
}

// Printer is a Result that prints itself otherwise than as its Markdown
// and the result file's path.
type Printer interface {
	// Print writes what the command prints once the result file is
	// written at path.
	Print(w io.Writer, path string) error
}

// Sectioner is a Result whose PERFORMANCE.md section is more than its
// Markdown, the machine and the result file (charts, a layout of its
// own).
type Sectioner interface {
	// Section is the result's section, the result file being at path.
	Section(path string, o SectionOptions) (string, error)
}

// SectionOptions say how a section draws and links its charts.
type SectionOptions struct {
	// ChartDir is where the charts go; LinkBase the directory the
	// section's links are relative to (PERFORMANCE.md's).
	ChartDir, LinkBase string
	// NoCharts leaves the charts out.
	NoCharts bool
	// RenderedBy, if set, is the command that rendered the section.
	RenderedBy string
}

// Verdict is a result measured against its targets.
type Verdict struct {
	// Missed, if not "", is printed after the result, gate or not.
	Missed string
	// Err is the run's error with the gate on when a target was missed;
	// nil when none was.
	Err error
	// Always makes Err the run's error with the gate off too: a safety
	// target (the chaos checker's).
	Always bool
}

// Options are a pipeline run's settings.
type Options struct {
	Env
	// Out is the results root: the result file goes to
	// <Out>/<experiment>/<host>-<start>.json. OutDir, if set, is the
	// result file's directory itself.
	Out, OutDir string
	// Performance, if set, is the Markdown file whose generated section
	// of the experiment the run rewrites (PERFORMANCE.md).
	Performance string
	// Gate makes a missed target the run's error.
	Gate bool
	// Stdout gets what the run prints (default os.Stdout).
	Stdout io.Writer
}

// kind is the Kind of the file at path, by the "kind" it names.
func (k Kinds) kind(path string) (Kind, error) {
	name, err := resultfile.Kind(path)
	if err != nil {
		return nil, err
	}
	if kd, ok := k[name]; ok {
		return kd, nil
	}
	known := make([]string, 0, len(k))
	for n := range k {
		known = append(known, n)
	}
	slices.Sort(known)
	return nil, fmt.Errorf("%s: kind %q is none of the lab's (%s)", path, name, strings.Join(known, ", "))
}

// Run is the pipeline for the experiment file at path: it loads the file
// by its kind and runs it as RunExperiment does. It returns the result
// file's path ("" when no result was written).
func (k Kinds) Run(ctx context.Context, path string, o Options) (string, error) {
	kd, err := k.kind(path)
	if err != nil {
		return "", err
	}
	e, err := kd.Load(path)
	if err != nil {
		return "", err
	}
	return RunExperiment(ctx, e, o)
}

// RunExperiment runs e through the pipeline: it records the machine on
// the data dir, runs e, writes the result file, prints the result,
// rewrites its section of o.Performance and applies the gate. It returns
// the result file's path ("" when no result was written).
func RunExperiment(ctx context.Context, e Experiment, o Options) (string, error) {
	if o.DataDir == "" {
		o.DataDir = e.DataDir()
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	machineDir := o.DataDir
	if machineDir == "" {
		machineDir = os.TempDir()
	} else if err := os.MkdirAll(machineDir, 0o755); err != nil {
		return "", err
	}
	o.Machine = resultfile.CollectMachine(machineDir)
	res, err := e.Run(ctx, o.Env)
	if err != nil {
		return "", err
	}
	h := res.Head()
	h.Command, h.Machine = o.Command, o.Machine
	var path string
	if o.OutDir != "" {
		path, err = h.WriteResultIn(o.OutDir, res)
	} else {
		path, err = h.WriteResult(o.Out, res)
	}
	if err != nil {
		return "", err
	}
	_ = printResult(res, o.Stdout, path) // best effort, as a command's prints are: the file holds the result
	if o.Performance != "" {
		sec, err := section(res, path, SectionOptions{ChartDir: filepath.Dir(path), LinkBase: filepath.Dir(o.Performance)})
		if err != nil {
			return path, err
		}
		if err := resultfile.UpdateSections(o.Performance, []string{h.Experiment}, map[string]string{h.Experiment: sec}); err != nil {
			return path, err
		}
	}
	v := res.Verdict()
	if v.Missed != "" {
		_, _ = fmt.Fprintln(o.Stdout, v.Missed)
	}
	if v.Err != nil && (o.Gate || v.Always) {
		return path, v.Err
	}
	return path, nil
}

// printResult writes what the command prints after a run: the result's own
// print, or its Markdown and the result file's path.
func printResult(r Result, w io.Writer, path string) error {
	if p, ok := r.(Printer); ok {
		return p.Print(w, path)
	}
	_, err := fmt.Fprintf(w, "%s\nresult: %s\n", r.Markdown(), path)
	return err
}

// section is the result's own section, or Section of its Markdown.
func section(r Result, path string, o SectionOptions) (string, error) {
	if s, ok := r.(Sectioner); ok {
		return s.Section(path, o)
	}
	return Section(r.Markdown(), r.Head(), path, o.RenderedBy), nil
}

// Section is a result's PERFORMANCE.md section: its Markdown, the
// machine and the result file, and the command that rendered it when
// set.
func Section(md string, h *resultfile.Header, path, renderedBy string) string {
	machine := h.MachineLine()
	if machine == "" {
		machine = "not recorded"
	}
	s := fmt.Sprintf("%s\nMachine: %s. Result file: `%s`.\n", md, machine, path)
	if renderedBy != "" {
		s += fmt.Sprintf("\nRendered by `%s`.\n", renderedBy)
	}
	return s
}
