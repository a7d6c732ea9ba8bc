package bench

import (
	"path/filepath"

	"github.com/samsamq/samsa/internal/resultfile"
)

// ReportInput is one result file to render.
type ReportInput struct {
	Path   string
	Result *ExperimentResult
}

// ReportOptions configure Report.
type ReportOptions struct {
	// Out is the Markdown file whose generated sections are rewritten
	// (created if missing). Empty: the sections go to Stdout only.
	Out string
	// SVGDir is where charts go; default the directory of each result
	// file (results/<experiment>/).
	SVGDir string
	// Command is the report command, named in each section.
	Command string
	// NoCharts skips the SVG charts.
	NoCharts bool
	// HTML also writes each rendered result's section as a static HTML
	// page beside its result file (HTMLPath), charts included.
	HTML bool
}

// Report renders each experiment's newest result (by start time) into
// its generated section and, with Out set, rewrites those sections of the
// file. It returns the sections by experiment, in input order.
func Report(inputs []ReportInput, opts ReportOptions) ([]string, map[string]string, error) {
	newest := map[string]ReportInput{}
	var order []string
	for _, in := range inputs {
		name := in.Result.Experiment
		old, seen := newest[name]
		if !seen {
			order = append(order, name)
		}
		if !seen || in.Result.Start.After(old.Result.Start) {
			newest[name] = in
		}
	}
	linkBase := "."
	if opts.Out != "" {
		linkBase = filepath.Dir(opts.Out)
	}
	sections := map[string]string{}
	for _, name := range order {
		in := newest[name]
		var charts []Chart
		if !opts.NoCharts {
			dir := opts.SVGDir
			if dir == "" {
				dir = filepath.Dir(in.Path)
			}
			var err error
			if charts, err = WriteCharts(in.Result, dir, linkBase); err != nil {
				return nil, nil, err
			}
		}
		sections[name] = Markdown(in.Result, charts, opts.Command)
		if opts.HTML {
			if err := WriteHTML(HTMLPath(in.Path), name, sections[name], linkBase); err != nil {
				return nil, nil, err
			}
		}
	}
	if opts.Out != "" {
		if err := resultfile.UpdateSections(opts.Out, order, sections); err != nil {
			return nil, nil, err
		}
	}
	return order, sections, nil
}
