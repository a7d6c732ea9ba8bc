package loadgen

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeliveriesPerTopic: a group keeps sets for its own topic's producers
// only (with a set per producer of every topic, 20,000 topics took 20,000²
// sets), and a message from another topic's producer is not the group's.
func TestDeliveriesPerTopic(t *testing.T) {
	d := newDeliveries(20_000, 2, 1)
	require.Len(t, d.groups[0], 2)
	p := make([]byte, headerSize)
	putHeader(p, 1, d.tag, 3, 7) // producer 3 sends to topic 1
	_, first, ok := d.received(1, p)
	require.True(t, ok && first)
	_, _, ok = d.received(0, p)
	require.False(t, ok, "topic 0's group got topic 1's message")
	require.Equal(t, int64(1), d.foreign.Load())
	d.ack(3, 7)
	d.ack(3, 8)
	require.Equal(t, int64(1), d.neverReceived(), "seq 8 never came")
}
