package loadgen

import "testing"

func TestRatioText(t *testing.T) {
	for v, want := range map[float64]string{2.391: "2.39×", 0.000552: "0.00055×", 0: "0.00×", 0.01: "0.01×"} {
		if got := ratioText(v); got != want {
			t.Errorf("ratioText(%v) = %q, want %q", v, got, want)
		}
	}
}
