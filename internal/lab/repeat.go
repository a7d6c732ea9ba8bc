package lab

import (
	"fmt"
	"slices"
)

// Repeat runs run for i = 1 to n and returns what each returned, in
// order; the first error ends it, as "<what>: repeat i: <error>".
func Repeat[R any](n int, what string, run func(i int) (R, error)) ([]R, error) {
	out := make([]R, 0, n)
	for i := 1; i <= n; i++ {
		r, err := run(i)
		if err != nil {
			return nil, fmt.Errorf("%s: repeat %d: %w", what, i, err)
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
