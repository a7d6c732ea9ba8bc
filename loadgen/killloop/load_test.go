package killloop

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOffsetOf(t *testing.T) {
	host, phys, ok := offsetOf("7F000001000088D90000000000000076")
	require.True(t, ok)
	require.EqualValues(t, 0x76, phys)
	require.Equal(t, "127.0.0.1:35033", host.String())
	_, phys, _ = offsetOf("7F00000100001F400000010000000000")
	require.EqualValues(t, 1<<40, phys)
	for _, bad := range []string{"", "7F000001000088D9000000000000007G"} {
		_, phys, ok = offsetOf(bad)
		require.False(t, ok, bad)
		require.EqualValues(t, -1, phys, bad)
	}
}

func TestBodyAndIDs(t *testing.T) {
	b := Body("p3-17", 32)
	require.Len(t, b, 32)
	require.Equal(t, "p3-17", IDOf(b))
	require.Equal(t, "", IDOf([]byte("no newline")))
	p, s, ok := ParseID(IDOf(b))
	require.True(t, ok)
	require.Equal(t, 3, p)
	require.EqualValues(t, 17, s)
	p, s, ok = ParseID("p12-345")
	require.True(t, ok)
	require.Equal(t, 12, p)
	require.EqualValues(t, 345, s)
	for _, bad := range []string{"x1-2", "p1", "p-1-2", "pa-2", "p1-", "p1-x"} {
		_, _, ok := ParseID(bad)
		require.False(t, ok, bad)
	}
}
