package lab

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRepeatNamesTheFailedRepeat(t *testing.T) {
	var progress strings.Builder
	got, err := Repeat(Repeats[int]{N: 3, What: "x", Progress: &progress,
		Title: func(i int) string { return fmt.Sprintf("x: repeat %d/3", i) },
		Done:  func(r int) string { return fmt.Sprintf("got %d", r) }},
		func(i int) (int, error) { return i * 10, nil })
	require.NoError(t, err)
	require.Equal(t, []int{10, 20, 30}, got)
	require.Equal(t, "== x: repeat 1/3\n   got 10\n== x: repeat 2/3\n   got 20\n== x: repeat 3/3\n   got 30\n", progress.String())
	_, err = Repeat(Repeats[int]{N: 3, What: "backlog"}, func(i int) (int, error) {
		if i == 2 {
			return 0, errors.New("boom")
		}
		return i, nil
	})
	require.EqualError(t, err, "backlog: repeat 2: boom")
}

func TestMedianTakesTheLowerMiddle(t *testing.T) {
	type run struct {
		name  string
		ratio float64
	}
	key := func(r run) float64 { return r.ratio }
	require.Equal(t, run{}, Median(nil, key))
	runs := []run{{"a", 3}, {"b", 1}, {"c", 2}}
	require.Equal(t, "c", Median(runs, key).name)
	require.Equal(t, "b", Median(append(runs, run{"d", 0.5}), key).name) // 0.5 1 2 3: the lower middle
	require.Equal(t, "a", runs[0].name, "the input keeps its order")
}
