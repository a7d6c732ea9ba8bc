package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/kafkadriver"
)

// kafkaFlags are loadgen's flags for the kafka driver: where the cluster
// is and how to log in (the --tls flags are the shared ones), and the
// producer, consumer and topic settings of a run from the command line
// (an experiment file's kafka cells carry their own).
type kafkaFlags struct {
	brokers    string
	sasl       kafkadriver.SASL
	idempotent string // "", true or false: unset keeps Kafka's default
	topicCfg   map[string]string
	k          loadgen.Kafka
}

func addKafkaFlags(fs *flag.FlagSet) *kafkaFlags {
	f := &kafkaFlags{}
	fs.StringVar(&f.brokers, "brokers", "", "kafka driver: the cluster's seed brokers, host:port,... (a host alone is port 9092)")
	fs.StringVar(&f.sasl.Mechanism, "sasl-mechanism", "", "kafka driver: SASL login, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default none)")
	fs.StringVar(&f.sasl.User, "sasl-user", os.Getenv("SAMSA_SASL_USER"), "kafka driver: the SASL user (default $SAMSA_SASL_USER)")
	fs.StringVar(&f.sasl.Password, "sasl-password", "", "kafka driver: the SASL password (default $SAMSA_SASL_PASSWORD; prefer the variable: a flag shows in ps)")
	fs.StringVar(&f.k.Acks, "kafka-acks", "", "kafka driver: acks, 0, 1 or all (default all)")
	fs.StringVar(&f.idempotent, "kafka-idempotent", "", "kafka driver: enable.idempotence, true or false (default: true with acks all, else false)")
	fs.StringVar(&f.k.Compression, "kafka-compression", "", "kafka driver: none, gzip, snappy, lz4 or zstd (default none)")
	fs.StringVar(&f.k.Linger, "kafka-linger", "", "kafka driver: linger, a duration (default: --linger with --send batch, else 0)")
	fs.IntVar(&f.k.MaxBatchBytes, "kafka-max-batch-bytes", 0, "kafka driver: a partition's batch bound in bytes (default franz-go's, 1000012)")
	fs.StringVar(&f.k.Commit, "kafka-commit", "", "kafka driver: consumer offset commits, auto or manual (after each poll) (default auto)")
	fs.StringVar(&f.k.AutoCommitInterval, "kafka-auto-commit-interval", "", "kafka driver: with auto commits, their interval (default 5s)")
	fs.IntVar(&f.k.ReplicationFactor, "kafka-replication-factor", 0, "kafka driver: the created topics' replication factor (default the brokers')")
	fs.Func("kafka-topic-config", "kafka driver: NAME=VALUE set on the created topics (repeatable), e.g. min.insync.replicas=2", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q: want NAME=VALUE", s)
		}
		if f.topicCfg == nil {
			f.topicCfg = map[string]string{}
		}
		f.topicCfg[name] = value
		return nil
	})
	return f
}

// settings are the run's Kafka settings from the flags (defaults and
// checks are EnsureKafka's).
func (f *kafkaFlags) settings() (loadgen.Kafka, error) {
	k := f.k
	k.TopicConfigs = f.topicCfg
	if f.idempotent != "" {
		on, err := strconv.ParseBool(f.idempotent)
		if err != nil {
			return k, fmt.Errorf("--kafka-idempotent %q: want true or false", f.idempotent)
		}
		k.Idempotent = &on
	}
	return k, nil
}

// apply gives ls the cluster's brokers and login.
func (f *kafkaFlags) apply(ls *labSettings) {
	for _, b := range strings.Split(f.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			ls.kafkaBrokers = append(ls.kafkaBrokers, b)
		}
	}
	ls.kafkaSASL = f.sasl
	if ls.kafkaSASL.Password == "" {
		ls.kafkaSASL.Password = os.Getenv("SAMSA_SASL_PASSWORD")
	}
}
