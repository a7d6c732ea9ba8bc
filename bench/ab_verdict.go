package bench

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// The bootstrap's defaults: 2000 resamples, a fixed seed, a 95% interval.
const (
	DefaultABResamples = 2000
	DefaultABSeed      = 1
	ABLevel            = 0.95
	// DefaultABThreshold is the ratio below which a whole confidence
	// interval makes B a regression: 10% slower, with confidence.
	DefaultABThreshold = 0.90
	// DefaultGateRounds is the rounds each of the perf gate's cells runs.
	DefaultGateRounds = 8
)

// ABInterval is a percentile-bootstrap confidence interval of the median
// of the rounds' B/A: the rounds are resampled with replacement
// Resamples times from a generator seeded with Seed, each resample's
// median taken, and the interval is the middle Level of those medians.
// The same ratios and seed give the same interval, on any machine.
type ABInterval struct {
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	Level     float64 `json:"level"`
	Resamples int     `json:"resamples"`
	Seed      uint64  `json:"seed"`
}

// BootstrapMedianCI is the percentile-bootstrap interval of vals' median
// at level (0.95 for 95%) from resamples resamples drawn with seed. One
// value gives the interval [v, v]; none, the zero interval.
func BootstrapMedianCI(vals []float64, level float64, resamples int, seed uint64) ABInterval {
	ci := ABInterval{Level: level, Resamples: resamples, Seed: seed}
	if len(vals) == 0 || resamples < 1 {
		return ci
	}
	rng := rand.New(rand.NewPCG(seed, 0x5a35a)) // the stream is the seed's alone
	meds := make([]float64, resamples)
	buf := make([]float64, len(vals))
	for i := range meds {
		for j := range buf {
			buf[j] = vals[rng.IntN(len(vals))]
		}
		sort.Float64s(buf)
		meds[i] = quantile(buf, 0.5)
	}
	sort.Float64s(meds)
	ci.Lo, ci.Hi = quantile(meds, (1-level)/2), quantile(meds, 1-(1-level)/2)
	return ci
}

// ABVerdict is what a confidence interval of B/A says of B.
type ABVerdict string

const (
	// ABOK: the interval reaches the threshold or above it; the rounds
	// do not show B slower with confidence.
	ABOK ABVerdict = "ok"
	// ABRegression: the whole interval is below the threshold.
	ABRegression ABVerdict = "REGRESSION"
	// ABFaster: the whole interval is above 1/threshold (said, never
	// gated).
	ABFaster ABVerdict = "faster"
)

// VerdictOf judges an interval of B/A for a metric where more is better
// (msgs/s, MB/s): a regression only when the whole interval lies below
// threshold, so the noise of a shared machine, which widens the
// interval, can make the gate miss a small regression but not invent
// one. For a latency (less is better) read the ratio the other way.
func VerdictOf(ci ABInterval, threshold float64) ABVerdict {
	switch {
	case ci.Hi < threshold:
		return ABRegression
	case threshold > 0 && ci.Lo > 1/threshold:
		return ABFaster
	}
	return ABOK
}

// Verdict is VerdictOf(r.CI, threshold).
func (r *ABResult) Verdict(threshold float64) ABVerdict { return VerdictOf(r.CI, threshold) }

// String is the interval as "0.912–1.034× (95% CI)".
func (ci ABInterval) String() string {
	return fmt.Sprintf("%.3f–%.3f× (%.0f%% CI)", ci.Lo, ci.Hi, 100*ci.Level)
}
