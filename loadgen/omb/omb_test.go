package omb

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/loadgen"
)

// TestTestResult: a run's figures land in OMB's fields and units.
func TestTestResult(t *testing.T) {
	w := &loadgen.OMBWorkload{Name: "w", Topics: 1, PartitionsPerTopic: 16, MessageSize: 1024, ProducersPerTopic: 1,
		SubscriptionsPerTopic: 1, ConsumerPerSubscription: 1, ProducerRate: 1000}
	res := &loadgen.Result{Driver: "samsa", MsgsPerSec: 1000, ConsumedPerSec: 1000,
		ServiceLatencyUs: &loadgen.Percentiles{Mean: 1500, P50: 1000, P99: 4000, Max: 9000},
		SendLagUs:        &loadgen.Percentiles{Mean: 20, P50: 10, P99: 80, Max: 300},
		E2ELatencyUs:     loadgen.Percentiles{Mean: 2500, P50: 2000, P99: 7000, Max: 12000},
		Intervals: []loadgen.Interval{{Seconds: 10, PublishRate: 999, ConsumeRate: 998, Backlog: 3,
			ServiceUs: loadgen.Percentiles{P99: 4000}, LagUs: loadgen.Percentiles{P99: 80}, E2EUs: loadgen.Percentiles{P99: 7000}}},
		Backlog: &loadgen.BacklogPhase{Bytes: 1 << 30, Messages: 1 << 20, BuildSeconds: 10, DrainSeconds: 5, DrainMsgsPerSec: 200000, Drained: true}}
	tr, err := NewTestResult(w, res)
	require.NoError(t, err)
	require.Equal(t, []float64{999}, tr.PublishRate)
	require.Equal(t, []int64{3}, tr.Backlog)
	require.Equal(t, []float64{4}, tr.PublishLatency99pct, "ms")
	require.Equal(t, []int64{80}, tr.PublishDelayLatency99pct, "µs")
	require.Equal(t, []float64{7}, tr.EndToEndLatency99pct)
	require.Equal(t, 1.5, tr.AggregatedPublishLatencyAvg)
	require.Equal(t, 7.0, tr.AggregatedEndToEndLatency99pct)
	b, err := json.Marshal(tr)
	require.NoError(t, err)
	for _, k := range []string{`"aggregatedPublishLatency99pct":4`, `"publishDelayLatency99pct":[80]`, `"consumersPerTopic":1`} {
		require.Contains(t, string(b), k)
	}
	var out bytes.Buffer
	Report(&out, w, res)
	for _, s := range []string{"Pub rate 1000.0 msg/s", "Aggregated Pub Latency (ms) avg: 1.50", "Pub Delay (us)", "E2E Latency (ms)", "drained in 5.0 s"} {
		require.True(t, strings.Contains(out.String(), s), "%q in\n%s", s, out.String())
	}
}
