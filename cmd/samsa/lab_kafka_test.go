package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsamq/samsa/loadgen"
)

// TestLoadgenKafka runs `samsa loadgen --driver kafka` against a kfake
// cluster started in this process, with a SCRAM login (the password from
// $SAMSA_SASL_PASSWORD) and Kafka settings from the flags: the run sends
// and receives everything, the result file records the settings, and the
// topic got the replication factor and config asked for.
func TestLoadgenKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "lg", "pw"))
	require.NoError(t, err)
	defer c.Close()
	t.Setenv("SAMSA_SASL_PASSWORD", "pw")
	res := filepath.Join(t.TempDir(), "run.json")
	out, err := stdio(t, "", func() error {
		return runLoadgen([]string{"--driver", "kafka", "--brokers", strings.Join(c.ListenAddrs(), ","),
			"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "lg",
			"--kafka-acks", "all", "--kafka-compression", "zstd", "--kafka-commit", "manual",
			"--kafka-replication-factor", "3", "--kafka-topic-config", "retention.ms=3600000",
			"--topic", "lgk", "--queues", "4", "--size", "256", "--send", "async", "--rate", "1000", "--keys", "32",
			"--warmup", "200ms", "--duration", "1s", "--report-interval", "500ms", "--drain", "30s", "--json", res})
	})
	require.NoError(t, err, out)
	require.Contains(t, out, "loadgen: driver kafka")
	require.Contains(t, out, "loadgen: kafka acks=all idempotent=true compression=zstd commit=manual replication_factor=3 retention.ms=3600000")

	b, err := os.ReadFile(res)
	require.NoError(t, err)
	var r loadgen.Result
	require.NoError(t, json.Unmarshal(b, &r))
	require.Equal(t, "kafka", r.Driver)
	require.Zero(t, r.Errors)
	require.Greater(t, r.Acked, int64(100))
	require.True(t, r.Drained, "received %d of %d", r.Received, r.Acked)
	require.Zero(t, r.NeverReceived)
	require.Greater(t, r.E2ELatencyUs.Count, int64(0))
	require.Contains(t, r.DriverConfig["settings"], "compression=zstd commit=manual")
	require.Equal(t, "SCRAM-SHA-512", r.DriverConfig["sasl"])
	require.NotContains(t, string(b), `"pw"`)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(scram.Auth{User: "lg", Pass: "pw"}.AsSha512Mechanism()))
	require.NoError(t, err)
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(context.Background(), "lgk-0")
	require.NoError(t, err)
	require.Len(t, tds["lgk-0"].Partitions, 4)
	for _, p := range tds["lgk-0"].Partitions {
		require.Len(t, p.Replicas, 3)
	}
}

// TestLoadgenKafkaFlags: a bad kafka flag, kafka flags given to another
// driver, and the kafka driver without --brokers are errors that say
// what to fix, before anything connects.
func TestLoadgenKafkaFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--driver", "kafka", "--brokers", "127.0.0.1:1", "--kafka-acks", "2"}, `kafka acks "2": want 0, 1 or all`},
		{[]string{"--driver", "kafka", "--brokers", "127.0.0.1:1", "--kafka-acks", "1", "--kafka-idempotent", "true"}, "kafka idempotent: needs acks all"},
		{[]string{"--driver", "kafka", "--brokers", "127.0.0.1:1", "--kafka-idempotent", "maybe"}, `--kafka-idempotent "maybe"`},
		{[]string{"--driver", "kafka", "--brokers", "127.0.0.1:1", "--sasl-mechanism", "KERBEROS", "--sasl-user", "u", "--sasl-password", "p"}, `sasl mechanism "KERBEROS"`},
		{[]string{"--driver", "nats", "--kafka-compression", "zstd"}, "kafka settings given to the nats driver"},
		{[]string{"--driver", "kafka"}, "the kafka driver drives a live cluster: give its brokers, --brokers host:9092,..."},
		{[]string{"--experiment", "experiments/peer-nats.json", "--kafka-acks", "1", "--kafka-commit", "manual"},
			"--kafka-acks, --kafka-commit do not apply with --experiment"},
	} {
		_, err := stdio(t, "", func() error { return runLoadgen(append(tc.args, "--duration", "1s", "--warmup", "0s")) })
		require.ErrorContains(t, err, tc.want, tc.args)
	}
}
