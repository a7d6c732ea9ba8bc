package lab

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/samsamq/samsa/internal/resultfile"
)

// ReportOptions configure Kinds.Report.
type ReportOptions struct {
	// Out is the Markdown file whose generated sections are rewritten
	// (created if missing). Empty: the sections are only returned.
	Out string
	// SVGDir is where charts go; default the directory of each result
	// file (results/<experiment>/).
	SVGDir string
	// Command is the report command, named in each section.
	Command string
	// NoCharts skips the charts.
	NoCharts bool
	// HTML also writes each rendered section as a static HTML page
	// beside its result file (HTMLPath), charts included.
	HTML bool
	// Progress gets a line per HTML page written (default io.Discard).
	Progress io.Writer
}

// Report renders result files of any kind into their PERFORMANCE.md
// sections: each experiment's newest result (by start time), the
// experiments in the order they first appear. With Out set, it rewrites
// those sections of Out. It returns the section names in order and the
// sections by name.
func (k Kinds) Report(paths []string, o ReportOptions) ([]string, map[string]string, error) {
	type input struct {
		path string
		res  Result
	}
	newest := map[string]input{}
	var order []string
	for _, p := range paths {
		kd, err := k.kind(p)
		if err != nil {
			return nil, nil, err
		}
		r, err := kd.Read(p)
		if err != nil {
			return nil, nil, err
		}
		name := r.Head().Experiment
		old, seen := newest[name]
		if !seen {
			order = append(order, name)
		}
		if !seen || r.Head().Start.After(old.res.Head().Start) {
			newest[name] = input{p, r}
		}
	}
	linkBase := "."
	if o.Out != "" {
		linkBase = filepath.Dir(o.Out)
	}
	sections := map[string]string{}
	for _, name := range order {
		in := newest[name]
		so := SectionOptions{ChartDir: o.SVGDir, LinkBase: linkBase, NoCharts: o.NoCharts, RenderedBy: o.Command}
		if so.ChartDir == "" {
			so.ChartDir = filepath.Dir(in.path)
		}
		sec, err := section(in.res, in.path, so)
		if err != nil {
			return nil, nil, err
		}
		sections[name] = sec
		if o.HTML {
			p := HTMLPath(in.path)
			if err := WriteHTML(p, name, sec, linkBase); err != nil {
				return nil, nil, err
			}
			if o.Progress != nil {
				_, _ = fmt.Fprintf(o.Progress, "wrote %s\n", p)
			}
		}
	}
	if o.Out != "" {
		if err := resultfile.UpdateSections(o.Out, order, sections); err != nil {
			return nil, nil, err
		}
	}
	return order, sections, nil
}
