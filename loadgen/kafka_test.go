package loadgen

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKafkaDefaults: Kafka's own defaults (acks all with idempotence,
// no compression, auto commit every 5 s, the brokers' replication factor),
// and idempotence off by default once acks is 0 or 1.
func TestKafkaDefaults(t *testing.T) {
	var k Kafka
	k.EnsureDefaults()
	require.NoError(t, k.Validate())
	require.Equal(t, "acks=all idempotent=true compression=none commit=auto auto_commit_interval=5s replication_factor=-1", k.String())
	require.Equal(t, 5*time.Second, k.AutoCommitEvery())

	k = Kafka{Acks: "1"}
	k.EnsureDefaults()
	require.NoError(t, k.Validate())
	require.False(t, *k.Idempotent)

	k = Kafka{Acks: "-1"}
	k.EnsureDefaults()
	require.Equal(t, KafkaAcksAll, k.Acks, "-1 is Kafka's spelling of all")
}

// TestKafkaLinger: the workload's batch linger in batch mode, none in
// the others, an explicit linger everywhere.
func TestKafkaLinger(t *testing.T) {
	var k Kafka
	require.Equal(t, 3*time.Millisecond, k.LingerFor(SendBatch, 3*time.Millisecond))
	require.Zero(t, k.LingerFor(SendAsync, 3*time.Millisecond))
	require.Zero(t, k.LingerFor(SendSync, 3*time.Millisecond))
	k.Linger = "20ms"
	require.Equal(t, 20*time.Millisecond, k.LingerFor(SendSync, 3*time.Millisecond))
	require.Equal(t, 20*time.Millisecond, k.LingerFor(SendBatch, 3*time.Millisecond))
}

// TestKafkaValidate: every bad setting is named at once.
func TestKafkaValidate(t *testing.T) {
	yes := true
	k := Kafka{Acks: "2", Compression: "brotli", Linger: "soon", MaxBatchBytes: -1, Commit: "sometimes",
		AutoCommitInterval: "0s", ReplicationFactor: -3, TopicConfigs: map[string]string{" ": "x"}}
	k.EnsureDefaults()
	err := k.Validate()
	require.Error(t, err)
	for _, want := range []string{`acks "2": want 0, 1 or all`, `compression "brotli"`, `linger "soon"`, "max_batch_bytes -1",
		`commit "sometimes"`, `auto_commit_interval "0s"`, "replication_factor -3", "topic_configs: an empty name"} {
		require.ErrorContains(t, err, want)
	}

	k = Kafka{Acks: "1", Idempotent: &yes}
	k.EnsureDefaults()
	require.ErrorContains(t, k.Validate(), "idempotent: needs acks all, got acks 1")
}

// TestEnsureKafka: a kafka cell gets its defaults; another driver's cell
// with kafka settings is an error, and a kafka cell cannot ask for Samsa's
// replication.
func TestEnsureKafka(t *testing.T) {
	c := Cluster{}
	require.NoError(t, c.EnsureKafka("kafka"))
	require.Equal(t, KafkaAcksAll, c.Kafka.Acks)
	require.NoError(t, (&Cluster{}).EnsureKafka("samsa"))
	require.ErrorContains(t, (&Cluster{Kafka: Kafka{Acks: "1"}}).EnsureKafka("nats"), "kafka settings given to the nats driver")
	require.ErrorContains(t, (&Cluster{Replication: "sync"}).EnsureReplication("kafka"), "the kafka driver runs no Samsa cluster")
}

// TestKafkaExperimentFile: a cell's "kafka" settings come through an
// experiment file, defaults filled; a misspelt one is an error, as is a
// bad value.
func TestKafkaExperimentFile(t *testing.T) {
	write := func(cluster string) string {
		p := filepath.Join(t.TempDir(), "k.json")
		require.NoError(t, os.WriteFile(p, []byte(`{"name": "k", "kind": "e2e",
  "base": {"message_size": 64, "duration": "1s"},
  "cells": [{"label": "kafka", "driver": "kafka", "cluster": `+cluster+`}]}`), 0o644))
		return p
	}
	e, err := LoadExperiment(write(`{"kafka": {"acks": "1", "compression": "zstd", "linger": "5ms", "commit": "manual", "replication_factor": 3}}`))
	require.NoError(t, err)
	cells, err := e.Expand(false)
	require.NoError(t, err)
	k := cells[0].Cluster.Kafka
	require.Equal(t, "acks=1 idempotent=false compression=zstd linger=5ms commit=manual replication_factor=3", k.String())

	_, err = LoadExperiment(write(`{"kafka": {"ack": "1"}}`))
	require.ErrorContains(t, err, `unknown field "ack"`)
	_, err = LoadExperiment(write(`{"kafka": {"compression": "brotli"}}`))
	require.ErrorContains(t, err, `cell kafka: kafka compression "brotli"`)
}
