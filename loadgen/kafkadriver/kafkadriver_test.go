package kafkadriver

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsamq/samsa/loadgen"
)

// TestProduceConsume: n messages produced with each acks level,
// idempotence on and off and each compression codec, in every send mode,
// all arrive at a consumer group; the produce requests the cluster saw
// carried the acks, the producer id (idempotence) and the codec asked for.
func TestProduceConsume(t *testing.T) {
	no, yes := false, true
	const n = 400
	for _, tc := range []struct {
		name    string
		k       loadgen.Kafka
		send    loadgen.SendMode
		consume loadgen.ConsumeMode
		acks    int16
		idem    bool
		codec   int8 // the batches' attributes & 7: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	}{
		{"acks0-async", loadgen.Kafka{Acks: "0"}, loadgen.SendAsync, loadgen.ConsumeLongPoll, 0, false, 0},
		{"acks1-sync-pull", loadgen.Kafka{Acks: "1"}, loadgen.SendSync, loadgen.ConsumePull, 1, false, 0},
		{"acksall-idempotent-batch", loadgen.Kafka{}, loadgen.SendBatch, loadgen.ConsumeLongPoll, -1, true, 0},
		{"acksall-not-idempotent", loadgen.Kafka{Idempotent: &no}, loadgen.SendAsync, loadgen.ConsumeLongPoll, -1, false, 0},
		{"gzip", loadgen.Kafka{Compression: "gzip"}, loadgen.SendAsync, loadgen.ConsumeLongPoll, -1, true, 1},
		{"snappy", loadgen.Kafka{Compression: "snappy"}, loadgen.SendBatch, loadgen.ConsumeLongPoll, -1, true, 2},
		{"lz4", loadgen.Kafka{Compression: "lz4", Idempotent: &yes}, loadgen.SendAsync, loadgen.ConsumePull, -1, true, 3},
		{"zstd-acks1", loadgen.Kafka{Compression: "zstd", Acks: "1"}, loadgen.SendAsync, loadgen.ConsumeLongPoll, 1, false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			seen := watchProduce(c)
			d := newDriver(t, c, tc.k)
			require.NoError(t, d.CreateTopic(context.Background(), "t", 4))
			cons, got := consume(t, d, "t", "g", tc.consume)
			produce(t, d, "t", tc.send, 0, n, true)
			got.waitFor(t, n)
			require.NoError(t, cons.Close())

			acks, idem, codecs := seen.snapshot()
			require.Equal(t, map[int16]bool{tc.acks: true}, acks, "the produce requests' acks")
			require.Equal(t, map[bool]bool{tc.idem: true}, idem, "producer ids >= 0 (idempotent)")
			require.Equal(t, map[int8]bool{tc.codec: true}, codecs, "the batches' codec")
		})
	}
}

// TestManualCommitResumes: a manual-commit group that read n messages
// and closed has committed them all; a new member of it reads only what
// came after, while a new group reads everything from the start.
func TestManualCommitResumes(t *testing.T) {
	const first, more = 300, 200
	c := newCluster(t)
	d := newDriver(t, c, loadgen.Kafka{Commit: "manual"})
	ctx := context.Background()
	require.NoError(t, d.CreateTopic(ctx, "t", 4))

	cons, got := consume(t, d, "t", "g", loadgen.ConsumeLongPoll)
	produce(t, d, "t", loadgen.SendAsync, 0, first, true)
	got.waitFor(t, first)
	require.NoError(t, cons.Close())

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	committed, err := adm.FetchOffsets(ctx, "g")
	require.NoError(t, err)
	var sum int64
	committed.Each(func(o kadm.OffsetResponse) {
		require.NoError(t, o.Err)
		sum += o.At
	})
	require.Equal(t, int64(first), sum, "committed offsets over the partitions")

	produce(t, d, "t", loadgen.SendAsync, first, first+more, true)
	cons, got = consume(t, d, "t", "g", loadgen.ConsumeLongPoll)
	got.waitFor(t, more)
	for i := 0; i < first; i++ {
		require.False(t, got.has(i), "message %d read again: the group did not resume from its commits", i)
	}
	require.NoError(t, cons.Close())

	cons, all := consume(t, d, "t", "fresh", loadgen.ConsumeLongPoll)
	all.waitFor(t, first+more)
	require.NoError(t, cons.Close())
}

// TestCreateTopic: creating a topic twice is fine; it gets the partitions,
// replication factor and configs asked for; the same name with another
// partition count, or a replication factor the cluster cannot hold, is a
// clear error.
func TestCreateTopic(t *testing.T) {
	c := newCluster(t)
	d := newDriver(t, c, loadgen.Kafka{ReplicationFactor: 3, TopicConfigs: map[string]string{"retention.ms": "3600000"}})
	ctx := context.Background()
	require.NoError(t, d.CreateTopic(ctx, "t", 4))
	require.NoError(t, d.CreateTopic(ctx, "t", 4), "already there: used as it is")

	tds, err := d.adm.ListTopics(ctx, "t")
	require.NoError(t, err)
	require.Len(t, tds["t"].Partitions, 4)
	for _, p := range tds["t"].Partitions {
		require.Len(t, p.Replicas, 3)
	}
	rcs, err := d.adm.DescribeTopicConfigs(ctx, "t")
	require.NoError(t, err)
	rc, err := rcs.On("t", nil)
	require.NoError(t, err)
	found := false
	for _, cfg := range rc.Configs {
		if cfg.Key == "retention.ms" {
			found = true
			require.Equal(t, "3600000", cfg.MaybeValue())
		}
	}
	require.True(t, found, "retention.ms set on the topic")

	require.ErrorContains(t, d.CreateTopic(ctx, "t", 6), "topic t exists with 4 partitions, the workload wants 6")

	wide := newDriver(t, c, loadgen.Kafka{ReplicationFactor: 5})
	err = wide.CreateTopic(ctx, "u", 1)
	require.ErrorContains(t, err, "replication factor 5")
	require.ErrorContains(t, err, "INVALID_REPLICATION_FACTOR")
}

// TestBadOptions: every bad option is named at once, before any
// connection is tried.
func TestBadOptions(t *testing.T) {
	yes := true
	_, err := New(Options{Settings: loadgen.Kafka{Acks: "2", Compression: "brotli", Commit: "never"},
		SASL: SASL{Mechanism: "GSSAPI", User: "u"}})
	require.Error(t, err)
	for _, want := range []string{"kafkadriver: ", "no brokers", `kafka acks "2": want 0, 1 or all`, `kafka compression "brotli"`,
		`kafka commit "never"`, `sasl mechanism "GSSAPI"`, "sasl GSSAPI: needs a user and a password"} {
		require.ErrorContains(t, err, want)
	}

	_, err = New(Options{Brokers: []string{"127.0.0.1:9092"}, Settings: loadgen.Kafka{Acks: "1", Idempotent: &yes}})
	require.ErrorContains(t, err, "kafka idempotent: needs acks all, got acks 1")
	_, err = New(Options{Brokers: []string{"127.0.0.1:9092"}, SASL: SASL{Password: "p"}})
	require.ErrorContains(t, err, "sasl: a user or password without a mechanism")
}

// TestDescribe: the result file gets the client, the settings with their
// defaults and the login's mechanism, never its user or password.
func TestDescribe(t *testing.T) {
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "kuser", "s3cret"))
	d, err := New(Options{Brokers: c.ListenAddrs(), SASL: SASL{Mechanism: "plain", User: "kuser", Password: "s3cret"}})
	require.NoError(t, err)
	defer d.Close()
	m := d.Describe()
	require.Equal(t, "acks=all idempotent=true compression=none commit=auto auto_commit_interval=5s replication_factor=-1", m["settings"])
	require.Equal(t, "PLAIN", m["sasl"])
	require.Contains(t, m["client"], "github.com/twmb/franz-go ") // a test binary has no module versions
	require.NotEmpty(t, m["server_version"])
	for k, v := range m {
		require.NotContains(t, fmt.Sprint(v), "s3cret", k)
		require.NotContains(t, fmt.Sprint(v), "kuser", k)
	}
}
