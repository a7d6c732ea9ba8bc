package lab

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRepeatNamesTheFailedRepeat(t *testing.T) {
	got, err := Repeat(3, "x", func(i int) (int, error) { return i * 10, nil })
	require.NoError(t, err)
	require.Equal(t, []int{10, 20, 30}, got)
	_, err = Repeat(3, "backlog", func(i int) (int, error) {
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
