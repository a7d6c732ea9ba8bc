package bench

import (
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/require"
)

func TestSpreadOf(t *testing.T) {
	require.Equal(t, Spread{}, SpreadOf(nil))
	require.Equal(t, Spread{Median: 7, Min: 7, Max: 7, Q1: 7, Q3: 7, N: 1}, SpreadOf([]float64{7}))
	in := []float64{30, 10, 20}
	s := SpreadOf(in)
	require.Equal(t, Spread{Median: 20, Min: 10, Max: 30, Q1: 15, Q3: 25, N: 3}, s)
	require.Equal(t, []float64{30, 10, 20}, in, "input left alone")
	require.InDelta(t, 1.0, s.RelSpread(), 1e-12)
	s = SpreadOf([]float64{4, 1, 3, 2})
	require.Equal(t, 2.5, s.Median)
	require.Equal(t, 1.75, s.Q1)
	require.Equal(t, 3.25, s.Q3)
	require.Zero(t, Spread{}.RelSpread())
}

func TestHistSummary(t *testing.T) {
	h := newHist()
	for i := 1; i <= 1000; i++ {
		recordUs(h, time.Duration(i)*time.Microsecond)
	}
	recordUs(h, 0)              // clamped to 1 µs
	recordUs(h, 20*time.Minute) // clamped to 10 min
	l := summarizeHist(mergeHists([]*hdr.Histogram{h, newHist()}))
	require.Equal(t, int64(1002), l.Count)
	require.InDelta(t, 500, l.P50, 2)
	require.InDelta(t, 990, l.P99, 2)
	require.InDelta(t, int64(histMaxUs), l.Max, float64(histMaxUs)/500)
	require.Equal(t, Latency{}, summarizeHist(newHist()))
}
