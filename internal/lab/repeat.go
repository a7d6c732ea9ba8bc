package lab

import (
	"fmt"
	"io"
	"slices"
)

// Repeats says how Repeat runs and reports a kind's repeats.
type Repeats[R any] struct {
	// N is the number of repeats; What names them in errors ("<What>:
	// repeat i: <error>").
	N    int
	What string
	// Progress, when set, gets "== <Title(i)>" before repeat i and
	// "   <Done(r)>" after one that succeeded (either func may be nil).
	Progress io.Writer
	Title    func(i int) string
	Done     func(r R) string
}

// Repeat runs run for i = 1 to o.N and returns what each returned, in
// order; the first error ends it.
func Repeat[R any](o Repeats[R], run func(i int) (R, error)) ([]R, error) {
	out := make([]R, 0, o.N)
	for i := 1; i <= o.N; i++ {
		if o.Progress != nil && o.Title != nil {
			Progressf(o.Progress, "== %s\n", o.Title(i))
		}
		r, err := run(i)
		if err != nil {
			return nil, fmt.Errorf("%s: repeat %d: %w", o.What, i, err)
		}
		if o.Progress != nil && o.Done != nil {
			Progressf(o.Progress, "   %s\n", o.Done(r))
		}
		out = append(out, r)
	}
	return out, nil
}

// Median is the element of rs in the middle by key (of two in the
// middle, the lower); the zero R when rs is empty.
func Median[R any](rs []R, key func(R) float64) R {
	if len(rs) == 0 {
		var zero R
		return zero
	}
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b R) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return sorted[(len(sorted)-1)/2]
}
