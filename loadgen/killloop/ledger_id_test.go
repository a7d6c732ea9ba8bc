package killloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIDTableRoundTrip: every id comes back as it went in; the load's
// canonical ids pack, anything else is interned, and two spellings of one
// number never share a key.
func TestIDTableRoundTrip(t *testing.T) {
	var tab idTable
	packed := []string{"p0-0", "p3-1234567", "p8388607-1099511627775", "p12-9"}
	other := []string{"a", "p", "p1", "p1-", "p-1", "p01-2", "p1-02", "p1-2-3", "p8388608-0", "p1-1099511627776", "q1-2", "p1-x", "P1-2", ""}
	seen := map[msgID]string{}
	for _, s := range append(packed, other...) {
		k := tab.key(s)
		require.Equal(t, s, tab.name(k), "round trip of %q", s)
		require.Equal(t, k, tab.key(s), "stable key of %q", s)
		if prev, dup := seen[k]; dup {
			t.Fatalf("%q and %q share key %x", prev, s, k)
		}
		seen[k] = s
	}
	for _, s := range packed {
		_, ok := packID(s)
		require.True(t, ok, "%q packs", s)
	}
	for _, s := range other {
		_, ok := packID(s)
		require.False(t, ok, "%q does not pack", s)
	}
	require.Len(t, tab.names, len(other))
}

// TestTallyMixesPackedAndInterned: the tally is the same whichever way an
// id is kept.
func TestTallyMixesPackedAndInterned(t *testing.T) {
	l := NewLedger()
	now := time.Now()
	l.Acked("p0-1", Pos{0, 0}, now)
	l.Acked("x", Pos{0, 1}, now)
	l.Acked("p0-2", Pos{0, 2}, now)
	l.Final("p0-1", Pos{0, 0})
	l.Final("x", Pos{0, 1})
	l.Final("p0-1", Pos{1, 0}) // a duplicate
	got := l.Tally()
	require.EqualValues(t, 1, got.Lost)
	require.EqualValues(t, 1, got.Duplicates)
	require.Equal(t, []string{"p0-2 acked at q0@2 by incarnation 1"}, got.LostSample)
	require.Equal(t, map[Pos]string{{0, 0}: "p0-1", {0, 1}: "x", {1, 0}: "p0-1"}, l.Found())
}
