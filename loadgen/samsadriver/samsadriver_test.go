package samsadriver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/loadgen"
)

func TestRunAgainstDevCluster(t *testing.T) {
	dev, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer dev.Close()
	for _, w := range []loadgen.Workload{
		{TopicPrefix: "lp", SendMode: loadgen.SendAsync, Rate: 2000, Consumers: 2},
		{TopicPrefix: "pl", SendMode: loadgen.SendSync, Rate: 1000, ConsumeMode: loadgen.ConsumePull, PullInterval: 10 * time.Millisecond},
		{TopicPrefix: "bt", SendMode: loadgen.SendBatch, BatchSize: 16, NoConsumers: true},
	} {
		t.Run(w.TopicPrefix, func(t *testing.T) {
			d, err := New(Options{NameServers: []string{dev.NamesrvAddr()}})
			require.NoError(t, err)
			w.MessageSize, w.QueuesPerTopic = 256, 4
			w.Warmup, w.Duration, w.ReportInterval, w.Drain = 200*time.Millisecond, time.Second, time.Second, 10*time.Second
			var out bytes.Buffer
			res, err := loadgen.Run(context.Background(), d, w, loadgen.Options{Out: &out})
			require.NoError(t, err, out.String())
			require.Zero(t, res.Errors, out.String())
			require.Greater(t, res.Acked, int64(500))
			if !w.NoConsumers {
				require.True(t, res.Drained, "received %d of %d", res.Received, res.Acked)
				require.GreaterOrEqual(t, res.Received, res.Acked)
				require.Greater(t, res.E2ELatencyUs.Count, int64(0))
			}
		})
	}
}
