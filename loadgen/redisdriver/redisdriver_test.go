package redisdriver

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/peerproc"
)

func TestRunAgainstRedisServer(t *testing.T) {
	if _, err := peerproc.Find("redis-server", "redis-server"); err != nil {
		t.Skipf("skipped: %v", err)
	}
	for _, tc := range []struct {
		name, fsync string
		w           loadgen.Workload
	}{
		{"everysec-async-longpoll", "everysec", loadgen.Workload{SendMode: loadgen.SendAsync, QueuesPerTopic: 4, Consumers: 2, Rate: 2000}},
		{"always-sync-pull", "always", loadgen.Workload{SendMode: loadgen.SendSync, ConsumeMode: loadgen.ConsumePull, PullInterval: 10 * time.Millisecond, Rate: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(Options{Dir: t.TempDir(), Fsync: tc.fsync})
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			w := tc.w
			w.MessageSize = 256
			w.Warmup, w.Duration = 200*time.Millisecond, time.Second
			w.ReportInterval, w.Drain = 500*time.Millisecond, 10*time.Second
			var out bytes.Buffer
			res, err := loadgen.Run(context.Background(), d, w, loadgen.Options{Out: &out})
			require.NoError(t, err, out.String())
			require.Zero(t, res.Errors, out.String())
			require.Greater(t, res.Acked, int64(50))
			require.True(t, res.Drained, "consumers caught up: %d of %d", res.Received, res.Acked)
			require.Equal(t, res.Acked, res.Received)
			require.Zero(t, res.Duplicates)
			require.Zero(t, res.NeverReceived)
			require.Equal(t, tc.fsync, d.Describe()["appendfsync"])
		})
	}
}

func TestBadFsyncAndMissingBinary(t *testing.T) {
	_, err := New(Options{Fsync: "never"})
	require.ErrorContains(t, err, "want always or everysec")
	t.Setenv("PATH", t.TempDir())
	if _, err := peerproc.Find("redis-server", "redis-server"); err == nil {
		t.Skip("redis-server found outside PATH")
	}
	_, err = New(Options{})
	require.True(t, errors.Is(err, peerproc.ErrNotInstalled), "%v", err)
	require.ErrorContains(t, err, "apt-get install -y redis-server")
}
