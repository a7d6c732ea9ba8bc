package ha

import (
	"errors"
	"slices"
	"testing"
)

func TestConsistentPoint(t *testing.T) {
	type E = []Epoch
	cases := []struct {
		name              string
		local             E
		localEnd          int64
		remote            E
		remoteEnd, expect int64
	}{
		{"same single epoch, slave behind", E{{1, 0}}, 500, E{{1, 0}}, 900, 500},
		{"same single epoch, slave ahead", E{{1, 0}}, 900, E{{1, 0}}, 500, 500},
		{"master moved on", E{{1, 0}}, 500, E{{1, 0}, {2, 800}}, 1200, 500},
		// An async master lost its tail [1000,1500) in a crash, restarted
		// (epoch 2 from 1000) and wrote on; the slave had copied up to 1500.
		{"diverged slave after async master lost its tail", E{{1, 0}}, 1500, E{{1, 0}, {2, 1000}}, 2500, 1000},
		// Same, with the slave also holding the old master's later epoch.
		{"slave holds an epoch the master lost", E{{1, 0}, {2, 1000}}, 1800, E{{1, 0}, {3, 1000}}, 2500, 1000},
		{"slave followed into the same epoch", E{{1, 0}, {3, 1000}}, 1800, E{{1, 0}, {3, 1000}}, 2500, 1800},
		{"same epoch number, different start", E{{1, 0}, {2, 700}}, 900, E{{1, 0}, {2, 600}}, 900, 600},
		{"master list trimmed at the front", E{{1, 0}, {2, 100}, {3, 200}}, 300, E{{3, 200}, {4, 250}}, 400, 250},
		{"nothing in common", E{{1, 0}}, 500, E{{2, 0}}, 500, -1},
		{"fresh clock epoch on the master", E{{1, 0}, {2, 100}}, 300, E{{2e17, 0}}, 300, -1},
		{"empty local", nil, 0, E{{1, 0}}, 10, -1},
		{"empty remote", E{{1, 0}}, 10, nil, 0, -1},
		{"interleaved epochs", E{{1, 0}, {3, 10}, {5, 20}}, 30, E{{1, 0}, {2, 5}, {4, 15}, {6, 25}}, 40, 5},
	}
	for _, c := range cases {
		if got := ConsistentPoint(c.local, c.localEnd, c.remote, c.remoteEnd); got != c.expect {
			t.Errorf("%s: %d, want %d", c.name, got, c.expect)
		}
		// The relation is symmetric.
		if got := ConsistentPoint(c.remote, c.remoteEnd, c.local, c.localEnd); got != c.expect {
			t.Errorf("%s, reversed: %d, want %d", c.name, got, c.expect)
		}
	}
}

func TestTruncateEpochs(t *testing.T) {
	l := []Epoch{{1, 0}, {2, 100}, {4, 200}}
	for _, c := range []struct {
		off  int64
		want int
	}{{300, 3}, {201, 3}, {200, 2}, {150, 2}, {100, 1}, {1, 1}, {0, 0}} {
		if got := TruncateEpochs(slices.Clone(l), c.off); len(got) != c.want {
			t.Errorf("truncate at %d: %v", c.off, got)
		}
	}
}

func TestEpochFor(t *testing.T) {
	l := []Epoch{{3, 100}, {4, 200}, {6, 500}}
	for _, c := range []struct {
		off      int64
		idx      int
		boundary int64
	}{{0, 0, 200}, {100, 0, 200}, {199, 0, 200}, {200, 1, 500}, {499, 1, 500}, {500, 2, 1<<63 - 1}, {9999, 2, 1<<63 - 1}} {
		i, end := epochFor(l, c.off)
		if i != c.idx || end != c.boundary {
			t.Errorf("epochFor(%d) = %d, %d; want %d, %d", c.off, i, end, c.idx, c.boundary)
		}
	}
}

func TestRecordEpoch(t *testing.T) {
	type E = []Epoch
	cases := []struct {
		name string
		list E
		e    Epoch
		at   int64
		want E // nil: ErrEpochMismatch
	}{
		{"empty list takes any epoch at or below", nil, Epoch{5, 100}, 4096, E{{5, 100}}},
		{"same epoch", E{{1, 0}}, Epoch{1, 0}, 500, E{{1, 0}}},
		{"new epoch where the log ends", E{{1, 0}}, Epoch{2, 500}, 500, E{{1, 0}, {2, 500}}},
		{"new epoch replaces an empty one", E{{1, 0}, {2, 500}}, Epoch{3, 500}, 500, E{{1, 0}, {3, 500}}},
		{"new epoch starting before the log end", E{{1, 0}}, Epoch{2, 400}, 500, nil},
		{"new epoch starting past the data", E{{1, 0}}, Epoch{2, 600}, 500, nil},
		{"older epoch", E{{1, 0}, {3, 100}}, Epoch{2, 100}, 500, nil},
		{"same epoch, other start", E{{1, 0}}, Epoch{1, 10}, 500, nil},
		{"epoch zero", nil, Epoch{0, 0}, 0, nil},
	}
	for _, c := range cases {
		got, _, err := recordEpoch(slices.Clone(c.list), c.e, c.at)
		if c.want == nil {
			if !errors.Is(err, ErrEpochMismatch) {
				t.Errorf("%s: %v, %v; want ErrEpochMismatch", c.name, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
