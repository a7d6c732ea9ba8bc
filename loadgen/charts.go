package loadgen

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/samsamq/samsa/internal/chartkit"
)

// Chart is a rendered chart a report links to.
type Chart struct {
	Title string
	Link  string // the path the Markdown uses, relative to the report
}

// WriteCharts renders the experiment's charts as SVG files in dir and
// returns them, each Link relative to linkBase (the report's directory):
//
//   - a latency chart (send p99, and e2e p50/p99 where cells consume) when
//     any cell runs at a fixed rate or consumes, and a throughput chart when
//     any cell runs at max rate: a bar per cell and figure, in its system's
//     colour (chartkit.SystemColor, the same in every chart);
//   - latency by percentile (HdrHistogram's percentile spectrum: x the
//     percentile on a log scale to 99.999%, y the latency), one line per
//     cell from all its runs' samples, for send and, where cells consume,
//     end-to-end latency. Results written before runs kept histograms have
//     none.
//
// Skipped cells are left out.
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
	consumes, maxRate := false, false
	for _, c := range cells {
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
		cs := chartSpec{name: r.Experiment + "-latency", title: r.Experiment + ": latency per cell (medians)", y: "ms"}
		for _, s := range lat {
			cs.add(s.name, cells, s.val)
		}
		charts = append(charts, cs)
	}
	if maxRate {
		cs := chartSpec{name: r.Experiment + "-throughput", title: r.Experiment + ": throughput per cell (medians)", y: "msgs/s"}
		cs.add("msgs/s", cells, func(s Summary) float64 { return s.MsgsPerSec })
		charts = append(charts, cs)
	}
	type file struct {
		name, title string
		p           *plot.Plot
		w           vg.Length
	}
	var files []file
	barW := vg.Length(max(7, 1.1*float64(len(cells)))) * vg.Inch
	for _, cs := range charts {
		p, err := cs.plot(cells)
		if err != nil {
			return nil, err
		}
		files = append(files, file{cs.name, cs.title, p, barW})
	}
	kinds := []string{"send"}
	if consumes {
		kinds = append(kinds, "e2e")
	}
	for _, kind := range kinds {
		p, err := percentilePlot(r.Experiment, kind, cells)
		if err != nil {
			return nil, err
		}
		if p != nil {
			files = append(files, file{r.Experiment + "-percentiles-" + kind, p.Title.Text, p, 8 * vg.Inch})
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []Chart
	for _, f := range files {
		path := filepath.Join(dir, f.name+".svg")
		if err := chartkit.Save(f.p, f.w, 4.6*vg.Inch, path); err != nil {
			return nil, fmt.Errorf("loadgen: chart %s: %w", path, err)
		}
		link := path
		if rel, err := filepath.Rel(linkBase, path); err == nil {
			link = filepath.ToSlash(rel)
		}
		out = append(out, Chart{Title: f.title, Link: link})
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

// plot draws each cell's bars in its system's colour; with several series
// the bars of a cell go from light to full colour in series order, and the
// axis says which is which.
func (c *chartSpec) plot(cells []*CellResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Y.Label.Text = c.y
	p.Add(plotter.NewGrid())
	w := vg.Points(14)
	labels := make([]string, len(cells))
	for i, cell := range cells {
		labels[i] = cell.Label
	}
	seen := map[string]bool{}
	for s, v := range c.vals {
		shade := 1 - 0.55*float64(len(c.vals)-1-s)/float64(max(len(c.vals)-1, 1))
		for i, cell := range cells {
			one := make(plotter.Values, len(cells))
			one[i] = v[i]
			bars, err := plotter.NewBarChart(one, w)
			if err != nil {
				return nil, err
			}
			bars.Color = chartkit.Lighten(chartkit.SystemColor(cell.Driver), shade)
			bars.LineStyle.Width = 0
			bars.Offset = w * vg.Length(2*s-len(c.vals)+1) / 2
			p.Add(bars)
			if !seen[cell.Driver] && s == len(c.vals)-1 {
				seen[cell.Driver] = true
				p.Legend.Add(cell.Driver, bars)
			}
		}
	}
	if len(c.names) > 1 {
		p.X.Label.Text = "bars per cell, light to full colour: " + joinNames(c.names)
	}
	p.NominalX(labels...)
	p.Y.Min = 0
	p.Y.Max *= 1.08
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = draw.XRight
	return p, nil
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// spectrum is the percentile points: 0 to 99.999%, denser toward the
// tail, as HdrHistogram's percentile output reads.
var spectrum = func() []float64 {
	var out []float64
	for _, nines := range []float64{0, 1, 2, 3, 4, 5} {
		lo := 100 * (1 - math.Pow(10, -nines))
		hi := 100 * (1 - math.Pow(10, -nines-1))
		for k := 0; k < 10; k++ {
			out = append(out, lo+(hi-lo)*float64(k)/10)
		}
	}
	return append(out, 99.999)
}()

// percentilePlot is latency against percentile for kind ("send" or
// "e2e"), a line per cell in its system's colour (dashes tell a system's
// cells apart); nil when no cell kept that histogram.
func percentilePlot(experiment, kind string, cells []*CellResult) (*plot.Plot, error) {
	p := plot.New()
	what := map[string]string{"send": "send latency", "e2e": "end-to-end latency"}[kind]
	p.Title.Text = fmt.Sprintf("%s: %s by percentile (all runs' samples)", experiment, what)
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency, ms (log)"
	p.X.Scale = nines{}
	p.X.Tick.Marker = ninesTicks{}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.X.Min, p.X.Max = 0, 99.999
	p.Add(plotter.NewGrid())
	perDriver := map[string]int{}
	drawn := 0
	for _, c := range cells {
		h, err := cellHistogram(c, kind)
		if err != nil {
			return nil, err
		}
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		var xys plotter.XYs
		for _, q := range spectrum {
			v := float64(h.ValueAtQuantile(q)) / 1e3
			xys = append(xys, plotter.XY{X: q, Y: max(v, 0.001)})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		k := perDriver[c.Driver]
		perDriver[c.Driver]++
		l.Color = chartkit.SystemColor(c.Driver)
		l.Dashes = plotutil.Dashes(k)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(c.Label, l)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	p.Y.Min, p.Y.Max = p.Y.Min/1.3, p.Y.Max*1.3 // a labelled tick beyond the extremes
	return p, nil
}

// cellHistogram merges the cell's runs' histograms of kind.
func cellHistogram(c *CellResult, kind string) (*hdr.Histogram, error) {
	var out *hdr.Histogram
	for _, r := range c.Runs {
		send, e2e, err := r.Histograms()
		if err != nil {
			return nil, err
		}
		h := send
		if kind == "e2e" {
			h = e2e
		}
		if h == nil {
			continue
		}
		if out == nil {
			out = newHist()
		}
		out.Merge(h)
	}
	return out, nil
}

// nines maps a percentile p to -log10(1 - p/100): 90% is 1, 99% 2,
// 99.999% 5 — the percentile spectrum's axis.
type nines struct{}

const maxNines = 5.0

func (nines) Normalize(lo, hi, x float64) float64 {
	f := func(p float64) float64 { return -math.Log10(max(1-p/100, math.Pow(10, -maxNines))) }
	return (f(x) - f(lo)) / (f(hi) - f(lo))
}

// ninesTicks marks 0, 90, 99, ... 99.999%.
type ninesTicks struct{}

func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, p := range []float64{0, 90, 99, 99.9, 99.99, 99.999} {
		if p >= lo && p <= hi {
			out = append(out, plot.Tick{Value: p, Label: strconv.FormatFloat(p, 'f', -1, 64) + "%"})
		}
	}
	return out
}

// logTicks marks 1, 2 and 5 of every decade within the range.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if lo <= 0 {
		lo = 0.001
	}
	for dec := math.Pow(10, math.Floor(math.Log10(lo))); dec <= hi; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * dec; v >= lo && v <= hi {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
			}
		}
	}
	return out
}

// MarkdownCharts is Markdown followed by links to the charts.
func (r *ExperimentResult) MarkdownCharts(charts []Chart) string {
	md := r.Markdown()
	for _, ch := range charts {
		md += fmt.Sprintf("\n![%s](%s)\n", ch.Title, ch.Link)
	}
	return md
}
