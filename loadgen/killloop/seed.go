package killloop

import (
	"math/rand/v2"
	"time"
)

// Seed is seed, or one from the clock when seed is 0. A run records the
// seed it used: its choices (kill moments, fault order) replay from it.
func Seed(seed uint64) uint64 {
	if seed == 0 {
		return uint64(time.Now().UnixNano())
	}
	return seed
}

// NewRand is the source of a run's seeded choices.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// UpTime is a seeded time in [lo, hi] (lo when hi <= lo): how long a
// process runs under load before the next fault.
func UpTime(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if span := hi - lo; span > 0 {
		return lo + time.Duration(rng.Int64N(int64(span)+1))
	}
	return lo
}
