package killloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTallyCleanRun: everything acknowledged and seen is read back where it
// was: no loss, no reuse; a failed send that was stored is only counted.
func TestTallyCleanRun(t *testing.T) {
	l := NewLedger()
	now := time.Now()
	for i, id := range []string{"a", "b", "c"} {
		l.Sent()
		l.Acked(id, Pos{0, int64(i)}, now)
		l.Seen(id, Pos{0, int64(i)})
		l.Final(id, Pos{0, int64(i)})
	}
	l.Sent()
	l.Final("d", Pos{0, 3}) // its answer was lost, the message was not
	got := l.Tally()
	require.Equal(t, Tally{Sent: 4, Acked: 3, Stored: 4, UnackedStored: 1, AckedByEpoch: map[int]int64{1: 3}}, got)
}

// TestTallyCrashLosesAndReuses is the bug the loop is for: an acknowledged
// (and consumed) message vanishes in a crash and its offset goes to a
// message sent after the restart.
func TestTallyCrashLosesAndReuses(t *testing.T) {
	l := NewLedger()
	now := time.Now()
	l.Acked("a", Pos{1, 0}, now)
	l.Acked("b", Pos{1, 1}, now)
	l.Seen("a", Pos{1, 0})
	l.Seen("b", Pos{1, 1})
	require.Equal(t, 2, l.Restarted(now))
	l.Acked("c", Pos{1, 1}, now) // b's offset, handed out again
	l.Backwards()
	l.Seen("c", Pos{1, 1})
	l.Final("a", Pos{1, 0})
	l.Final("c", Pos{1, 1})
	got := l.Tally()
	require.EqualValues(t, 1, got.Lost)
	require.Equal(t, map[int]int64{1: 1}, got.LostByEpoch)
	require.Equal(t, []string{"b acked at q1@1 by incarnation 1"}, got.LostSample)
	require.EqualValues(t, 1, got.OffsetsReused)
	require.EqualValues(t, 1, got.AckedReassigned)
	require.EqualValues(t, 1, got.SeenLost)
	require.EqualValues(t, 1, got.Backwards)
	require.Zero(t, got.Duplicates)
}

// TestTallyDuplicates: an id read back at two offsets is one duplicate,
// not a loss.
func TestTallyDuplicates(t *testing.T) {
	l := NewLedger()
	l.Acked("a", Pos{0, 0}, time.Now())
	l.Final("a", Pos{0, 0})
	l.Final("a", Pos{2, 5})
	got := l.Tally()
	require.EqualValues(t, 1, got.Duplicates)
	require.Zero(t, got.Lost)
	require.Zero(t, got.AckedReassigned)
}

// TestFirstAckMeasuresRecovery: each epoch's first acknowledgement closes
// its channel and fixes its recovery time; later ones change nothing.
func TestFirstAckMeasuresRecovery(t *testing.T) {
	l := NewLedger()
	t0 := time.Now()
	l.Restarted(t0)
	ch := l.FirstAck()
	select {
	case <-ch:
		t.Fatal("first ack before any ack")
	default:
	}
	l.Acked("a", Pos{0, 0}, t0.Add(40*time.Millisecond))
	l.Acked("b", Pos{0, 1}, t0.Add(90*time.Millisecond))
	<-ch // closed: does not block
	require.Equal(t, 40*time.Millisecond, l.Recovery())
	l.Restarted(t0.Add(time.Second))
	require.Zero(t, l.Recovery())
	require.NotEqual(t, ch, l.FirstAck())
}
