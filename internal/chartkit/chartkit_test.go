package chartkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func TestSystemColorsAreFixedAndDistinct(t *testing.T) {
	seen := map[any]string{}
	for _, s := range []string{"samsa", "rocketmq", "nats", "redis", "rabbitmq"} {
		c := SystemColor(s)
		require.NotContains(t, seen, c, "%s shares %s's colour", s, seen[c])
		seen[c] = s
	}
	require.Equal(t, SystemColor("nats"), SystemColor("nats-sync"), "a cell of a system keeps its colour")
	require.Equal(t, SystemColor("whatever"), SystemColor("whatever"))
}

func TestWrap(t *testing.T) {
	p := plot.New()
	long := strings.Repeat("word ", 40)
	got := Wrap(long, p.Title.TextStyle, 3*vg.Inch)
	require.Greater(t, strings.Count(got, "\n"), 1)
	for _, l := range strings.Split(got, "\n") {
		require.LessOrEqual(t, p.Title.TextStyle.Width(l), 3*vg.Inch, l)
	}
	require.Equal(t, "short", Wrap("short", p.Title.TextStyle, 3*vg.Inch))
}

func TestSaveDrawsLegendAndTitle(t *testing.T) {
	p := plot.New()
	p.Title.Text = strings.Repeat("a long title ", 12)
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	require.NoError(t, err)
	p.Add(l)
	p.Legend.Add("series-one", l)
	path := filepath.Join(t.TempDir(), "c.svg")
	require.NoError(t, Save(p, 6*vg.Inch, 4*vg.Inch, path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "series-one")
	require.Contains(t, string(b), "a long title")
}
