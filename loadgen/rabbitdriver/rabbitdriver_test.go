package rabbitdriver

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

// TestRunAgainstRabbitMQ starts one server per queue type (about 10 s each).
func TestRunAgainstRabbitMQ(t *testing.T) {
	if _, err := rabbitBinary(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	if testing.Short() {
		t.Skip("skipped in -short: starts rabbitmq-server")
	}
	for _, tc := range []struct {
		queue, protocol string
		w               loadgen.Workload
	}{
		{"stream", "stream", loadgen.Workload{SendMode: loadgen.SendAsync, QueuesPerTopic: 4, Consumers: 2, Rate: 2000, ConsumerGroups: 2}},
		{"stream", "stream", loadgen.Workload{SendMode: loadgen.SendSync, QueuesPerTopic: 2, Rate: 100}},
		{"stream", "amqp", loadgen.Workload{SendMode: loadgen.SendAsync, QueuesPerTopic: 4, Consumers: 2, Rate: 2000, ConsumerGroups: 2}},
		{"quorum", "amqp", loadgen.Workload{SendMode: loadgen.SendSync, QueuesPerTopic: 2, Rate: 100}},
	} {
		t.Run(tc.queue+"-"+tc.protocol+"-"+string(tc.w.SendMode), func(t *testing.T) {
			d, err := New(Options{Dir: t.TempDir(), Queue: tc.queue, Protocol: tc.protocol})
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			w := tc.w
			w.MessageSize = 256
			w.Warmup, w.Duration = 200*time.Millisecond, time.Second
			w.ReportInterval, w.Drain = 500*time.Millisecond, 15*time.Second
			var out bytes.Buffer
			res, err := loadgen.Run(context.Background(), d, w, loadgen.Options{Out: &out})
			require.NoError(t, err, out.String())
			require.Zero(t, res.Errors, out.String())
			require.Greater(t, res.Acked, int64(50))
			groups := int64(w.ConsumerGroups)
			if groups == 0 {
				groups = 1
			}
			require.True(t, res.Drained, "consumers caught up: %d of %d", res.Received, groups*res.Acked)
			require.Equal(t, groups*res.Acked, res.Received)
			require.Zero(t, res.NeverReceived)
			require.Equal(t, tc.queue, d.Describe()["queue_type"])
		})
	}
}

func TestQuorumOneGroup(t *testing.T) {
	d := &Driver{opts: Options{Queue: "quorum"}}
	d.mu.queues, d.mu.group = map[string]int{}, map[string]string{"t": "g1"}
	_, err := d.NewConsumer(context.Background(), "t", "g2", loadgen.ConsumerOptions{}, nil)
	require.ErrorContains(t, err, "not supported")
}

func TestBadQueueAndMissingBinary(t *testing.T) {
	_, err := New(Options{Queue: "classic"})
	require.ErrorContains(t, err, "want quorum or stream")
	_, err = New(Options{Queue: "quorum", Protocol: "stream"})
	require.ErrorContains(t, err, "want amqp, or stream for stream queues")
	t.Setenv("PATH", t.TempDir())
	if _, err := peerproc.Find("rabbitmq-server", "rabbitmq-server"); err == nil {
		t.Skip("rabbitmq-server found outside PATH")
	}
	_, err = New(Options{})
	require.True(t, errors.Is(err, peerproc.ErrNotInstalled), "%v", err)
	require.ErrorContains(t, err, "apt-get install -y rabbitmq-server")
}

// The Go client's default 8 KiB socket buffers starve a stream consumer
// on loopback (stream.go): the environment must leave them to the kernel.
func TestStreamEnvKeepsPlatformSocketBuffers(t *testing.T) {
	tcp := streamEnvOptions(5552).TCPParameters
	require.Zero(t, tcp.ReadBuffer, "SO_RCVBUF")
	require.Zero(t, tcp.WriteBuffer, "SO_SNDBUF")
	require.True(t, tcp.NoDelay)
}
