package loadgen

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Chart is a rendered chart a report links to.
type Chart struct {
	Title string
	Link  string // the path the Markdown uses, relative to the report
}

// WriteCharts renders the experiment's charts as SVG files in dir and
// returns them, each Link relative to linkBase (the report's directory):
// a latency chart (send p99, and e2e p50/p99 where cells consume) when any
// cell runs at a fixed rate or consumes, and a throughput chart when any
// cell runs at max rate. Skipped cells are left out.
func (r *ExperimentResult) WriteCharts(dir, linkBase string) ([]Chart, error) {
	var cells []*CellResult
	for i := range r.Cells {
		if r.Cells[i].Skipped == "" && len(r.Cells[i].Runs) > 0 {
			cells = append(cells, &r.Cells[i])
		}
	}
	if len(cells) == 0 {
		return nil, nil
	}
	labels := make([]string, len(cells))
	consumes, maxRate := false, false
	for i, c := range cells {
		labels[i] = c.Label
		consumes = consumes || !c.Workload.NoConsumers
		maxRate = maxRate || c.Workload.Rate == 0
	}
	type series struct {
		name string
		val  func(Summary) float64
	}
	var charts []chartSpec
	lat := []series{{"send p99", func(s Summary) float64 { return s.SendP99Us / 1e3 }}}
	if consumes {
		lat = append(lat,
			series{"e2e p50", func(s Summary) float64 { return s.E2EP50Us / 1e3 }},
			series{"e2e p99", func(s Summary) float64 { return s.E2EP99Us / 1e3 }})
	}
	if consumes || !maxRate {
		charts = append(charts, chartSpec{name: r.Experiment + "-latency", title: r.Experiment + ": latency per cell (medians)", y: "ms"})
		for _, s := range lat {
			charts[len(charts)-1].add(s.name, cells, s.val)
		}
	}
	if maxRate {
		charts = append(charts, chartSpec{name: r.Experiment + "-throughput", title: r.Experiment + ": throughput per cell (medians)", y: "msgs/s"})
		charts[len(charts)-1].add("msgs/s", cells, func(s Summary) float64 { return s.MsgsPerSec })
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []Chart
	for _, cs := range charts {
		p, err := cs.plot(labels)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, cs.name+".svg")
		if err := p.Save(vg.Length(max(7, 1.1*float64(len(cells))))*vg.Inch, 4.2*vg.Inch, path); err != nil {
			return nil, fmt.Errorf("loadgen: chart %s: %w", path, err)
		}
		link := path
		if rel, err := filepath.Rel(linkBase, path); err == nil {
			link = filepath.ToSlash(rel)
		}
		out = append(out, Chart{Title: cs.title, Link: link})
	}
	return out, nil
}

// chartSpec is a grouped bar chart: one group per cell, one bar per series.
type chartSpec struct {
	name, title, y string
	names          []string
	vals           []plotter.Values
}

func (c *chartSpec) add(name string, cells []*CellResult, f func(Summary) float64) {
	v := make(plotter.Values, len(cells))
	for i, cell := range cells {
		v[i] = f(cell.Median)
	}
	c.names, c.vals = append(c.names, name), append(c.vals, v)
}

func (c *chartSpec) plot(labels []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Y.Label.Text = c.y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	w := vg.Points(14)
	for i, v := range c.vals {
		bars, err := plotter.NewBarChart(v, w)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(2*i-len(c.vals)+1) / 2
		p.Add(bars)
		p.Legend.Add(c.names[i], bars)
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = -0.9
	return p, nil
}

// MarkdownCharts is Markdown followed by links to the charts.
func (r *ExperimentResult) MarkdownCharts(charts []Chart) string {
	md := r.Markdown()
	for _, ch := range charts {
		md += fmt.Sprintf("\n![%s](%s)\n", ch.Title, ch.Link)
	}
	return md
}
