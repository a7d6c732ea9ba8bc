package loadgen

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestShippedOMBWorkloads: every workload under workloads/ loads and maps,
// except the one whose producerRate 0 asks for OMB's rate search, which
// is refused saying so.
func TestShippedOMBWorkloads(t *testing.T) {
	files, err := filepath.Glob("../workloads/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		w, err := LoadOMBWorkload(f)
		require.NoError(t, err, f)
		_, err = w.Workload(OMBScale{})
		if w.ProducerRate == 0 {
			require.ErrorContains(t, err, "not supported", f)
			continue
		}
		require.NoError(t, err, f)
	}
}

func TestOMBMapping(t *testing.T) {
	w, err := LoadOMBWorkload("../workloads/1-topic-16-partitions-1kb.yaml")
	require.NoError(t, err)
	lw, err := w.Workload(OMBScale{})
	require.NoError(t, err)
	require.Equal(t, "1-topic-16-partitions-1kb", lw.Name)
	require.Equal(t, 1, lw.Topics)
	require.Equal(t, 16, lw.QueuesPerTopic)
	require.Equal(t, 1024, lw.MessageSize)
	require.Equal(t, 1, lw.Producers)
	require.Equal(t, 1, lw.ConsumerGroups)
	require.Equal(t, 1, lw.Consumers)
	require.Equal(t, 50000.0, lw.Rate)
	require.Equal(t, SendAsync, lw.SendMode)
	require.Equal(t, 15*time.Minute, lw.Duration)
	require.Equal(t, time.Minute, lw.Warmup, "OMB's default warm-up")
	require.FileExists(t, lw.PayloadFile)
	require.Zero(t, lw.KeyCount)

	q, err := w.Workload(OMBScale{Warmup: 2 * time.Second, Duration: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, q.Duration)
	require.Equal(t, 2*time.Second, q.Warmup)
	require.Equal(t, 2500*time.Millisecond, q.ReportInterval, "a quick run reports more often")

	b, err := LoadOMBWorkload("../workloads/1-topic-100-partitions-1kb-4p-4c-200k-backlog.yaml")
	require.NoError(t, err)
	bl, err := b.Workload(OMBScale{BacklogBytes: 64 << 20})
	require.NoError(t, err)
	require.Equal(t, int64(64<<20), bl.BacklogBytes)
	require.Equal(t, 1.0, bl.BacklogDrainRatio)
	require.Equal(t, 1000, bl.RandomPayloads)
	require.Equal(t, 0.5, bl.RandomBytesRatio)
	require.Equal(t, 4, bl.Producers)
	require.Equal(t, 4, bl.Consumers)
	full, err := b.Workload(OMBScale{})
	require.NoError(t, err)
	require.Equal(t, int64(512)<<30, full.BacklogBytes)
}

func TestOMBParseRefusals(t *testing.T) {
	_, err := ParseOMBWorkload([]byte("topics: 1\npartitionPerTopic: 4\n"))
	require.ErrorContains(t, err, "partitionPerTopic", "a misspelt field is an error, not a default")
	w, err := ParseOMBWorkload([]byte("name: x\ntopics: 1\npartitionsPerTopic: 2\nmessageSize: 64\nsubscriptionsPerTopic: 1\n" +
		"consumerPerSubscription: 1\nproducersPerTopic: 1\nproducerRate: 100\ntestDurationMinutes: 1\nkeyDistributor: SOMETIMES\n"))
	require.NoError(t, err)
	_, err = w.Workload(OMBScale{})
	require.ErrorContains(t, err, "keyDistributor")
	w.KeyDistributor = "RANDOM_NANO"
	lw, err := w.Workload(OMBScale{})
	require.NoError(t, err)
	require.Equal(t, 10000, lw.KeyCount)
	require.True(t, lw.RandomKeys)
	w.PayloadFile = "payload/none.data"
	_, err = w.Workload(OMBScale{})
	require.ErrorContains(t, err, "not found")
}
