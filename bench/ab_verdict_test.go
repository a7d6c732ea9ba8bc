package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBootstrapMedianCI(t *testing.T) {
	vals := []float64{0.91, 1.02, 0.97, 1.05, 0.99, 0.94, 1.01, 0.98}
	ci := BootstrapMedianCI(vals, 0.95, 2000, 7)
	if again := BootstrapMedianCI(vals, 0.95, 2000, 7); again != ci {
		t.Fatalf("same ratios and seed, two intervals: %+v, %+v", ci, again)
	}
	med := SpreadOf(vals).Median
	if !(ci.Lo <= med && med <= ci.Hi) || ci.Lo < 0.91 || ci.Hi > 1.05 || ci.Lo == ci.Hi {
		t.Fatalf("interval %+v around median %v of %v", ci, med, vals)
	}
	if ci.Level != 0.95 || ci.Resamples != 2000 || ci.Seed != 7 {
		t.Fatalf("interval does not say how it was drawn: %+v", ci)
	}
	if one := BootstrapMedianCI([]float64{0.8}, 0.95, 2000, 1); one.Lo != 0.8 || one.Hi != 0.8 {
		t.Fatalf("one round: %+v", one)
	}
	if flat := BootstrapMedianCI([]float64{1.1, 1.1, 1.1}, 0.95, 100, 1); flat.Lo != 1.1 || flat.Hi != 1.1 {
		t.Fatalf("equal rounds: %+v", flat)
	}
	if none := BootstrapMedianCI(nil, 0.95, 2000, 1); none.Lo != 0 || none.Hi != 0 {
		t.Fatalf("no rounds: %+v", none)
	}
}

func TestVerdictOf(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   ABVerdict
	}{
		{0.70, 0.89, ABRegression},
		{0.70, 0.90, ABOK}, // touching the threshold is not "wholly below"
		{0.85, 1.20, ABOK},
		{0.95, 1.05, ABOK},
		{1.12, 1.30, ABFaster},
	} {
		if got := VerdictOf(ABInterval{Lo: c.lo, Hi: c.hi}, DefaultABThreshold); got != c.want {
			t.Errorf("[%v, %v]: %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
}

// noisy is mean×(1+u), u uniform in ±10%: a single run's spread on a
// calm shared machine (PERFORMANCE.md measures ±15% at worst here).
func noisy(rng *rand.Rand, mean float64) float64 { return mean * (1 + 0.2*(rng.Float64()-0.5)) }

// simulateAB draws rounds ratios of B (speed k of A's) over A, both with
// ±10% noise, from seed, and returns their interval as RunAB takes it.
func simulateAB(seed uint64, rounds int, k float64) ABInterval {
	rng := rand.New(rand.NewPCG(seed, 99))
	ratios := make([]float64, rounds)
	for i := range ratios {
		a, b := noisy(rng, 10000), noisy(rng, 10000*k)
		ratios[i] = b / a
	}
	return BootstrapMedianCI(ratios, ABLevel, DefaultABResamples, DefaultABSeed)
}

// TestVerdictSimulatedGates: 200 seeded simulated gates at the gate's
// rounds, each binary's runs ±10% around its mean: a B 25% slower is a
// regression every time, the same binary twice never. Seeded, so it
// cannot flake; the margins it logs say how far from flipping it is.
func TestVerdictSimulatedGates(t *testing.T) {
	const sims = 200
	worstSlow, worstSame := 0.0, math.Inf(1)
	for seed := uint64(1); seed <= sims; seed++ {
		slow := simulateAB(seed, DefaultGateRounds, 0.75)
		if v := VerdictOf(slow, DefaultABThreshold); v != ABRegression {
			t.Errorf("seed %d: B 25%% slower judged %s (interval %s)", seed, v, slow)
		}
		same := simulateAB(seed+1_000_000, DefaultGateRounds, 1)
		if v := VerdictOf(same, DefaultABThreshold); v != ABOK {
			t.Errorf("seed %d: the same binary twice judged %s (interval %s)", seed, v, same)
		}
		worstSlow, worstSame = math.Max(worstSlow, slow.Hi), math.Min(worstSame, same.Hi)
	}
	t.Logf("%d simulated gates of %d rounds: highest upper bound 25%% slower %.3f, lowest upper bound same binary %.3f (threshold %.2f)",
		sims, DefaultGateRounds, worstSlow, worstSame, DefaultABThreshold)
}
