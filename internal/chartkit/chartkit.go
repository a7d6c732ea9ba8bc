// Package chartkit holds what the lab's charts share (bench and loadgen):
// a fixed colour per system, so that "nats" is the same colour in every
// chart, and Save, which lays a plot out so that nothing is hidden or cut:
// the legend in a column of its own beside the data (never over it), the
// title wrapped to the width, a margin round the edge for rotated tick
// labels.
//
// Functions are safe for concurrent use; a *plot.Plot is not.
package chartkit

import (
	"fmt"
	"hash/fnv"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette is Okabe–Ito's colour-blind-safe set, black last.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{240, 228, 66, 255},  // yellow
	color.RGBA{0, 0, 0, 255},       // black
}

// systems are the names with a colour of their own, kept across charts.
var systems = map[string]int{
	"samsa": 0, "rocketmq": 3, "nats": 1, "redis": 2, "rabbitmq": 4,
	// storage backends (bench)
	"pwrite": 0, "mmap": 5, "odirect": 1, "uring": 2,
}

// SystemColor is name's colour: fixed for the systems the lab knows
// (samsa, rocketmq, nats, redis, rabbitmq) and its storage backends; any
// other name gets one from a hash of it, the same in every chart. A name
// is matched on its first word ("nats-sync" is nats).
func SystemColor(name string) color.Color {
	key := strings.ToLower(name)
	if i := strings.IndexAny(key, " -_/:("); i > 0 {
		if _, ok := systems[key]; !ok {
			key = key[:i]
		}
	}
	if i, ok := systems[key]; ok {
		return palette[i]
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return palette[h.Sum32()%uint32(len(palette))]
}

// Margin is the blank round a saved chart.
const Margin = 6 * vg.Millimeter

// Save writes p to path (format from the extension, e.g. .svg) at w × h.
// The plot's legend is drawn in a column right of the plot, its title is
// wrapped to the width, and a margin keeps rotated or long tick labels in
// the picture. p's Legend and Title are changed.
func Save(p *plot.Plot, w, h vg.Length, path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return fmt.Errorf("chartkit: %s: %w", path, err)
	}
	Draw(p, draw.New(c))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// Draw lays p out on dc as Save does.
func Draw(p *plot.Plot, dc draw.Canvas) {
	if p.BackgroundColor != nil {
		dc.SetColor(p.BackgroundColor)
		dc.Fill(dc.Rectangle.Path())
	}
	p.BackgroundColor = nil
	area := draw.Crop(dc, Margin, -Margin, Margin, -Margin)
	leg := p.Legend
	p.Legend = plot.NewLegend()
	p.Legend.TextStyle = leg.TextStyle
	legW := vg.Length(0)
	if r := leg.Rectangle(area); r.Size().X > 0 {
		legW = r.Size().X + 4*vg.Millimeter
		if legW > area.Size().X/2 {
			legW = area.Size().X / 2
		}
	}
	plotArea := draw.Crop(area, 0, -legW, 0, 0)
	p.Title.Text = Wrap(p.Title.Text, p.Title.TextStyle, plotArea.Size().X)
	p.Draw(plotArea)
	if legW > 0 {
		// The legend column starts below the title, beside the data.
		top := vg.Length(0)
		if p.Title.Text != "" {
			top = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		}
		legArea := draw.Crop(area, area.Size().X-legW+2*vg.Millimeter, 0, 0, -top)
		leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, 0, 0
		leg.Draw(legArea)
	}
}

// Wrap breaks s at spaces so that no line is wider than width in sty.
func Wrap(s string, sty draw.TextStyle, width vg.Length) string {
	if s == "" || sty.Width(s) <= width {
		return s
	}
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && sty.Width(line+" "+w) > width {
				lines = append(lines, line)
				line = w
				continue
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// Lighten mixes c with white: f = 1 keeps c, f = 0 is white.
func Lighten(c color.Color, f float64) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8(255 - (255-float64(v>>8))*f) }
	return color.RGBA{mix(r), mix(g), mix(b), 255}
}
