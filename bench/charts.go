package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/samsamq/samsa/internal/chartkit"
)

// chartFile is a chart before it is saved: its file name and plot.
type chartFile struct {
	name  string
	title string
	p     *plot.Plot
}

// WriteCharts renders the result's charts as SVG files in dir and returns
// them, Link being each file's path relative to linkBase (the report's
// directory). Charts that the matrix does not support (one writer count,
// one backend, one batch limit) are not drawn.
func WriteCharts(r *ExperimentResult, dir, linkBase string) ([]Chart, error) {
	var files []chartFile
	for _, f := range []func(*ExperimentResult) ([]chartFile, error){throughputCharts, batchCharts, backendCharts} {
		cs, err := f(r)
		if err != nil {
			return nil, err
		}
		files = append(files, cs...)
	}
	if len(files) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []Chart
	for _, cf := range files {
		path := filepath.Join(dir, cf.name+".svg")
		if err := chartkit.Save(cf.p, 7*vg.Inch, 4.2*vg.Inch, path); err != nil {
			return nil, fmt.Errorf("bench: chart %s: %w", path, err)
		}
		link := path
		if rel, err := filepath.Rel(linkBase, path); err == nil {
			link = filepath.ToSlash(rel)
		}
		out = append(out, Chart{Title: cf.title, Link: link})
	}
	return out, nil
}

// okCells are the cells that ran.
func okCells(r *ExperimentResult) []*CellResult {
	var out []*CellResult
	for i := range r.Cells {
		if r.Cells[i].Status == StatusOK && len(r.Cells[i].Runs) > 0 {
			out = append(out, &r.Cells[i])
		}
	}
	return out
}

// group buckets cells by key, keeping first-seen order of the keys.
func group(cells []*CellResult, key func(*CellResult) string) ([]string, map[string][]*CellResult) {
	var keys []string
	m := map[string][]*CellResult{}
	for _, c := range cells {
		k := key(c)
		if _, ok := m[k]; !ok {
			keys = append(keys, k)
		}
		m[k] = append(m[k], c)
	}
	return keys, m
}

func distinct[T comparable](cells []*CellResult, f func(*CellResult) T) []T {
	seen := map[T]bool{}
	var out []T
	for _, c := range cells {
		if v := f(c); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// medianXY has the median as Y and min/max as its error bars.
type medianXY struct {
	x []float64
	s []Spread
}

func (m medianXY) Len() int                    { return len(m.x) }
func (m medianXY) XY(i int) (float64, float64) { return m.x[i], m.s[i].Median }
func (m medianXY) YError(i int) (float64, float64) {
	return m.s[i].Median - m.s[i].Min, m.s[i].Max - m.s[i].Median
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// log2Axis puts a log scale on the axis with a tick at every value.
func log2Axis(a *plot.Axis, vals []float64, label func(float64) string) {
	a.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	for _, v := range vals {
		ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
	}
	a.Tick.Marker = ticks
}

// logTicks marks 1, 2 and 5 of every decade within the axis range, with
// compact labels (gonum's LogTicks marks whole decades, some outside the
// range, which throws the layout off).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if lo <= 0 {
		lo = 1
	}
	for dec := math.Pow(10, math.Floor(math.Log10(lo))); dec <= hi; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * dec; v >= lo && v <= hi {
				out = append(out, plot.Tick{Value: v, Label: compact(v)})
			}
		}
	}
	return out
}

// compact writes 2000 as 2k, 5e6 as 5M.
func compact(v float64) string {
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// addLine draws one series with points and min–max error bars, in col
// (nil: the i-th of plotutil's colours).
func addLine(p *plot.Plot, i int, col color.Color, name string, xy medianXY) error {
	l, s, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	if col == nil {
		col = plotutil.Color(i)
	}
	l.Color, s.Color, s.Shape = col, col, plotutil.Shape(i)
	l.Dashes = plotutil.Dashes(i)
	eb, err := plotter.NewYErrorBars(xy)
	if err != nil {
		return err
	}
	eb.Color = col
	p.Add(l, s, eb)
	p.Legend.Add(name, l, s)
	return nil
}

// throughputCharts: msgs/s against writers, a line per backend, one chart
// per flush policy, size and group-commit setting.
func throughputCharts(r *ExperimentResult) ([]chartFile, error) {
	cells := okCells(r)
	if len(distinct(cells, func(c *CellResult) int { return c.Writers })) < 2 {
		return nil, nil
	}
	keys, groups := group(cells, func(c *CellResult) string {
		k := c.Flush + "-" + sizeLabel(int64(c.Size))
		if c.MinInterval > 0 {
			k += "-linger" + time.Duration(c.MinInterval).String()
		}
		if c.MaxBatchBytes > 0 {
			k += "-batch" + sizeLabel(c.MaxBatchBytes)
		}
		return k
	})
	var out []chartFile
	for _, k := range keys {
		g := groups[k]
		writers := distinct(g, func(c *CellResult) int { return c.Writers })
		if len(writers) < 2 {
			continue
		}
		c0 := g[0]
		title := fmt.Sprintf("%s: %s flush, %s messages", r.Experiment, c0.Flush, sizeLabel(int64(c0.Size)))
		if c0.Flush == "sync" && (c0.MaxBatchBytes > 0 || c0.MinInterval > 0) {
			title += fmt.Sprintf(", linger %s, batch ≤ %s", time.Duration(c0.MinInterval), sizeLabel(c0.MaxBatchBytes))
		}
		p := newPlot(title, "writers", "appends/s (median, min–max)")
		ws := make([]float64, len(writers))
		for i, w := range writers {
			ws[i] = float64(w)
		}
		sort.Float64s(ws)
		log2Axis(&p.X, ws, func(v float64) string { return strconv.Itoa(int(v)) })
		lo, hi := g[0].Summary.MsgsPerSec.Median, g[0].Summary.MsgsPerSec.Median
		for _, c := range g {
			lo, hi = min(lo, c.Summary.MsgsPerSec.Min), max(hi, c.Summary.MsgsPerSec.Max)
		}
		logY := lo > 0 && hi/lo > 20
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = logTicks{}
			p.Y.Label.Text = "appends/s (log; median, min–max)"
		}
		bkeys, byBackend := group(g, func(c *CellResult) string { return c.Backend })
		for i, be := range bkeys {
			bc := byBackend[be]
			sort.Slice(bc, func(a, b int) bool { return bc[a].Writers < bc[b].Writers })
			xy := medianXY{}
			for _, c := range bc {
				xy.x = append(xy.x, float64(c.Writers))
				xy.s = append(xy.s, c.Summary.MsgsPerSec)
			}
			if err := addLine(p, i, chartkit.SystemColor(be), be, xy); err != nil {
				return nil, err
			}
		}
		if !logY {
			p.Y.Min = 0
			p.Y.Max *= 1.05
		}
		out = append(out, chartFile{name: r.Experiment + "-throughput-" + k, title: title, p: p})
	}
	return out, nil
}

// batchCharts: append latency percentiles against the group-commit byte
// limit, at the largest writer count, one chart per backend and size.
func batchCharts(r *ExperimentResult) ([]chartFile, error) {
	var cells []*CellResult
	for _, c := range okCells(r) {
		if c.Flush == "sync" && c.MaxBatchBytes > 0 {
			cells = append(cells, c)
		}
	}
	if len(distinct(cells, func(c *CellResult) int64 { return c.MaxBatchBytes })) < 2 {
		return nil, nil
	}
	keys, groups := group(cells, func(c *CellResult) string {
		k := c.Backend + "-" + sizeLabel(int64(c.Size))
		if c.MinInterval > 0 {
			k += "-linger" + time.Duration(c.MinInterval).String()
		}
		return k
	})
	var out []chartFile
	for _, k := range keys {
		g := groups[k]
		maxW := 0
		for _, c := range g {
			maxW = max(maxW, c.Writers)
		}
		var at []*CellResult
		for _, c := range g {
			if c.Writers == maxW {
				at = append(at, c)
			}
		}
		if len(at) < 2 {
			continue
		}
		sort.Slice(at, func(a, b int) bool { return at[a].MaxBatchBytes < at[b].MaxBatchBytes })
		c0 := at[0]
		title := fmt.Sprintf("%s: %s sync, %s messages, %d writers, linger %s", r.Experiment, c0.Backend,
			sizeLabel(int64(c0.Size)), maxW, time.Duration(c0.MinInterval))
		p := newPlot(title, "max batch bytes", "append latency, ms (median, min–max)")
		var xs []float64
		for _, c := range at {
			xs = append(xs, float64(c.MaxBatchBytes))
		}
		log2Axis(&p.X, xs, func(v float64) string { return sizeLabel(int64(v)) })
		series := []struct {
			name string
			get  func(*CellResult) Spread
		}{
			{"p50", func(c *CellResult) Spread { return c.Summary.P50Us }},
			{"p99", func(c *CellResult) Spread { return c.Summary.P99Us }},
			{"p99.9", func(c *CellResult) Spread { return c.Summary.P999Us }},
		}
		for i, s := range series {
			xy := medianXY{x: xs}
			for _, c := range at {
				v := s.get(c)
				v.Min, v.Median, v.Max = v.Min/1000, v.Median/1000, v.Max/1000
				xy.s = append(xy.s, v)
			}
			if err := addLine(p, i, nil, s.name, xy); err != nil {
				return nil, err
			}
		}
		p.Y.Min = 0
		p.Y.Max *= 1.05
		out = append(out, chartFile{name: r.Experiment + "-latency-vs-batch-" + k, title: title, p: p})
	}
	return out, nil
}

// backendCharts: bars of each backend's appends/s relative to the fastest
// backend of its group (same size, writers and limits), one chart per
// flush policy: groups differ by orders of magnitude, backends within one
// are what the chart compares. The tables have the absolute figures.
func backendCharts(r *ExperimentResult) ([]chartFile, error) {
	const maxBarGroups = 8
	cells := okCells(r)
	backends := distinct(cells, func(c *CellResult) string { return c.Backend })
	if len(backends) < 2 {
		return nil, nil
	}
	fkeys, byFlush := group(cells, func(c *CellResult) string { return c.Flush })
	var out []chartFile
	for _, fl := range fkeys {
		rest := func(c *CellResult) string {
			s := fmt.Sprintf("%s w%d", sizeLabel(int64(c.Size)), c.Writers)
			if c.MaxBatchBytes > 0 {
				s += " ≤" + sizeLabel(c.MaxBatchBytes)
			}
			return s
		}
		fc := byFlush[fl]
		gkeys, byGroup := group(fc, rest)
		if len(gkeys) > maxBarGroups { // keep the largest group-commit limit only
			top := int64(0)
			for _, c := range fc {
				top = max(top, c.MaxBatchBytes)
			}
			var keep []*CellResult
			for _, c := range fc {
				if c.MaxBatchBytes == top {
					keep = append(keep, c)
				}
			}
			if gkeys, byGroup = group(keep, rest); len(gkeys) > maxBarGroups {
				continue
			}
		}
		best := map[string]float64{}
		for _, gk := range gkeys {
			for _, c := range byGroup[gk] {
				best[gk] = max(best[gk], c.Summary.MsgsPerSec.Median)
			}
		}
		title := fmt.Sprintf("%s: backends, %s flush", r.Experiment, fl)
		p := newPlot(title, "", "appends/s ÷ the fastest backend's (medians)")
		w := vg.Points(min(380/float64(len(gkeys)*len(backends)), 36))
		for i, be := range backends {
			vals := make(plotter.Values, len(gkeys))
			for j, gk := range gkeys {
				for _, c := range byGroup[gk] {
					if c.Backend == be && best[gk] > 0 {
						vals[j] = c.Summary.MsgsPerSec.Median / best[gk]
					}
				}
			}
			bar, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return nil, err
			}
			bar.Color = chartkit.SystemColor(be)
			bar.LineStyle.Width = 0
			bar.Offset = w * vg.Length(float64(i)-float64(len(backends)-1)/2)
			p.Add(bar)
			p.Legend.Add(be, bar)
		}
		p.NominalX(gkeys...)
		p.Y.Min, p.Y.Max = 0, 1.05
		out = append(out, chartFile{name: r.Experiment + "-backends-" + fl, title: title, p: p})
	}
	return out, nil
}
