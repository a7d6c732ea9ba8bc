package kafkadriver

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/loadgen"
)

// TestRunAgainstKfake: loadgen.Run through the driver against kfake, in
// each send mode, keyed and not, two members in a group, auto and manual
// commits, two groups on two topics (Run gives a group one name on every
// topic, so one Kafka group spans both): nothing fails, every
// acknowledged message arrives, end-to-end latency is recorded.
func TestRunAgainstKfake(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    loadgen.Kafka
		w    loadgen.Workload
	}{
		{"async-keys-two-members", loadgen.Kafka{Compression: "lz4"},
			loadgen.Workload{SendMode: loadgen.SendAsync, Rate: 2000, KeyCount: 64, Consumers: 2}},
		{"sync-pull-manual", loadgen.Kafka{Acks: "1", Commit: "manual"},
			loadgen.Workload{SendMode: loadgen.SendSync, Rate: 500, ConsumeMode: loadgen.ConsumePull, PullInterval: 10 * time.Millisecond}},
		{"batch-two-groups-two-topics", loadgen.Kafka{Linger: "2ms", MaxBatchBytes: 64 << 10},
			loadgen.Workload{SendMode: loadgen.SendBatch, BatchSize: 64, Rate: 2000, ConsumerGroups: 2, Topics: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			d := newDriver(t, c, tc.k)
			w := tc.w
			w.MessageSize, w.QueuesPerTopic = 256, 4
			w.Warmup, w.Duration, w.ReportInterval, w.Drain = 200*time.Millisecond, time.Second, 500*time.Millisecond, 30*time.Second
			var out bytes.Buffer
			res, err := loadgen.Run(context.Background(), d, w, loadgen.Options{Out: &out})
			require.NoError(t, err, out.String())
			require.Zero(t, res.Errors, out.String())
			require.Greater(t, res.Acked, int64(100), out.String())
			require.True(t, res.Drained, "received %d of %d\n%s", res.Received, res.Acked, out.String())
			require.GreaterOrEqual(t, res.Received, res.Acked)
			require.Zero(t, res.NeverReceived)
			require.Greater(t, res.E2ELatencyUs.Count, int64(0))
			require.Equal(t, "kafka", res.Driver)
			k := tc.k
			k.EnsureDefaults()
			require.Equal(t, k.String(), res.DriverConfig["settings"], "the result records the settings run")
		})
	}
}
