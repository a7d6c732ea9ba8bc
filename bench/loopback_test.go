package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopbackCarriesEveryByte(t *testing.T) {
	for _, conns := range []int{1, 3} {
		res, err := RunLoopback(context.Background(), LoopbackOptions{Conns: conns, Chunk: 10000, Bytes: 3 << 20})
		require.NoError(t, err)
		per := int64(3<<20) / int64(conns)
		require.Equal(t, per*int64(conns), res.Bytes, "conns %d", conns)
		require.Positive(t, res.MBPerSec)
		require.Equal(t, "loopback", res.Kind)
	}
}

func TestLoopbackRefusesBadOptionsAndStopsWhenCancelled(t *testing.T) {
	_, err := RunLoopback(context.Background(), LoopbackOptions{Conns: 1000})
	require.ErrorContains(t, err, "conns 1000")
	_, err = RunLoopback(context.Background(), LoopbackOptions{Chunk: -1})
	require.ErrorContains(t, err, "chunk -1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = RunLoopback(ctx, LoopbackOptions{Bytes: 64 << 30}) // would take many seconds; the cancelled context stops it at once
	require.ErrorIs(t, err, context.Canceled)
}
