package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Markers around a generated section of PERFORMANCE.md. Everything
// outside them is hand-written and kept.
const (
	beginMarker = "<!-- BEGIN GENERATED: %s -->"
	endMarker   = "<!-- END GENERATED: %s -->"
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
		if err := UpdateSections(opts.Out, order, sections); err != nil {
			return nil, nil, err
		}
	}
	return order, sections, nil
}

// UpdateSections rewrites the generated sections named in order: the text
// between each section's markers is replaced; a section without markers
// is appended at the end. A missing file is created.
func UpdateSections(path string, order []string, sections map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	doc := string(b)
	for _, name := range order {
		if doc, err = replaceSection(doc, name, sections[name]); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// replaceSection puts body between name's markers in doc.
func replaceSection(doc, name, body string) (string, error) {
	begin, end := fmt.Sprintf(beginMarker, name), fmt.Sprintf(endMarker, name)
	block := begin + "\n" + strings.TrimRight(body, "\n") + "\n" + end
	i := strings.Index(doc, begin)
	if i < 0 {
		if strings.Contains(doc, end) {
			return "", fmt.Errorf("section %s: end marker without a begin marker", name)
		}
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		if doc != "" {
			doc += "\n"
		}
		return doc + block + "\n", nil
	}
	j := strings.Index(doc[i:], end)
	if j < 0 {
		return "", fmt.Errorf("section %s: begin marker without an end marker", name)
	}
	return doc[:i] + block + doc[i+j+len(end):], nil
}
