//go:build !race

package broker

// raceEnabled reports whether the test binary runs under the race detector.
const raceEnabled = false
