package loadgen

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// OpenMessaging Benchmark (OMB) workload files, read with OMB's meaning
// (its Workload class), so a run can be set beside the published OMB
// results of Kafka, Pulsar, RocketMQ and the rest (package omb prints and
// writes the figures in OMB's form):
//
//   - topics × partitionsPerTopic queues; producersPerTopic producers on
//     each topic sharing producerRate (msg/s, the total over every
//     producer); subscriptionsPerTopic subscriptions (consumer groups) of
//     consumerPerSubscription consumers each;
//   - messageSize bytes from payloadFile, or from a pool of
//     randomizedPayloadPoolSize payloads whose first randomBytesRatio share
//     is random; keys by keyDistributor (none, round robin or random over
//     10,000 keys);
//   - a warm-up of warmupDurationMinutes (1 when absent), then
//     testDurationMinutes measured; with consumerBacklogSizeGB, the backlog
//     phase (Workload.BacklogBytes) inside it.
//
// One OMB feature is not supported and says so: producerRate 0 (OMB then
// searches for the highest rate the consumers keep up with).

// Key distributors (OMB's KeyDistributorType).
const (
	OMBNoKey         = "NO_KEY"
	OMBKeyRoundRobin = "KEY_ROUND_ROBIN"
	OMBRandomNano    = "RANDOM_NANO"
)

// keyCount is how many distinct keys OMB's key distributors draw from.
const ombKeyCount = 10_000

// OMBWorkload is an OpenMessaging Benchmark workload file.
type OMBWorkload struct {
	Name                      string  `yaml:"name"`
	Topics                    int     `yaml:"topics"`
	PartitionsPerTopic        int     `yaml:"partitionsPerTopic"`
	KeyDistributor            string  `yaml:"keyDistributor"`
	MessageSize               int     `yaml:"messageSize"`
	UseRandomizedPayloads     bool    `yaml:"useRandomizedPayloads"`
	RandomBytesRatio          float64 `yaml:"randomBytesRatio"`
	RandomizedPayloadPoolSize int     `yaml:"randomizedPayloadPoolSize"`
	PayloadFile               string  `yaml:"payloadFile"`
	SubscriptionsPerTopic     int     `yaml:"subscriptionsPerTopic"`
	ProducersPerTopic         int     `yaml:"producersPerTopic"`
	ConsumerPerSubscription   int     `yaml:"consumerPerSubscription"`
	ProducerRate              float64 `yaml:"producerRate"`
	ConsumerBacklogSizeGB     float64 `yaml:"consumerBacklogSizeGB"`
	// BacklogDrainRatio is 1 when absent (OMB's default).
	BacklogDrainRatio   *float64 `yaml:"backlogDrainRatio"`
	TestDurationMinutes float64  `yaml:"testDurationMinutes"`
	// WarmupDurationMinutes is 1 when absent (OMB's default).
	WarmupDurationMinutes *float64 `yaml:"warmupDurationMinutes"`

	// File is where it was read from ("" when parsed from bytes);
	// payloadFile is found relative to its directory, or its parent's
	// (OMB's files name "payload/…" from the repository's top).
	File string `yaml:"-"`
}

// LoadOMBWorkload reads a workload file. An unknown field is an error: a
// misspelt field would otherwise run with its default.
func LoadOMBWorkload(path string) (*OMBWorkload, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loadgen: OMB workload: %w", err)
	}
	w, err := ParseOMBWorkload(b)
	if err != nil {
		return nil, fmt.Errorf("loadgen: OMB workload %s: %w", path, err)
	}
	w.File = path
	return w, nil
}

// ParseOMBWorkload reads a workload from YAML.
func ParseOMBWorkload(b []byte) (*OMBWorkload, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var w OMBWorkload
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	return &w, nil
}

// OMBScale shortens a workload for a quick run: each set field replaces the
// file's figure.
type OMBScale struct {
	Warmup, Duration time.Duration
	// BacklogBytes replaces consumerBacklogSizeGB (only where the file
	// asks for a backlog).
	BacklogBytes int64
	// Rate replaces producerRate.
	Rate float64
}

// Workload maps the workload onto a Workload with OMB's meaning.
// Sends are asynchronous, as every OMB driver's are. The name is the
// file's base name (OMB's names are prose).
func (w *OMBWorkload) Workload(s OMBScale) (Workload, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	lw := Workload{
		Name:           w.shortName(),
		TopicPrefix:    "omb-" + w.shortName(),
		Topics:         w.Topics,
		QueuesPerTopic: w.PartitionsPerTopic,
		MessageSize:    w.MessageSize,
		Producers:      w.ProducersPerTopic,
		ConsumerGroups: w.SubscriptionsPerTopic,
		Consumers:      w.ConsumerPerSubscription,
		Rate:           w.ProducerRate,
		SendMode:       SendAsync,
		Duration:       ombMinutes(w.TestDurationMinutes),
		Warmup:         time.Minute,
		// OMB reports every 10 s.
		ReportInterval: 10 * time.Second,
	}
	if w.WarmupDurationMinutes != nil {
		lw.Warmup = ombMinutes(*w.WarmupDurationMinutes)
	}
	if w.SubscriptionsPerTopic == 0 || w.ConsumerPerSubscription == 0 {
		lw.NoConsumers, lw.Consumers, lw.ConsumerGroups = true, 0, 1
	}
	switch strings.ToUpper(w.KeyDistributor) {
	case "", OMBNoKey:
	case OMBKeyRoundRobin:
		lw.KeyCount = ombKeyCount
	case OMBRandomNano:
		lw.KeyCount, lw.RandomKeys = ombKeyCount, true
	default:
		bad("keyDistributor %q: want %s, %s or %s", w.KeyDistributor, OMBNoKey, OMBKeyRoundRobin, OMBRandomNano)
	}
	if w.UseRandomizedPayloads {
		lw.RandomPayloads, lw.RandomBytesRatio = w.RandomizedPayloadPoolSize, w.RandomBytesRatio
		if lw.RandomPayloads == 0 {
			bad("useRandomizedPayloads needs randomizedPayloadPoolSize > 0")
		}
	} else if w.PayloadFile != "" {
		p, err := w.payloadPath()
		if err != nil {
			bad("%v", err)
		}
		lw.PayloadFile = p
	}
	if w.ConsumerBacklogSizeGB > 0 {
		lw.BacklogBytes = int64(w.ConsumerBacklogSizeGB * (1 << 30))
		lw.BacklogDrainRatio = 1
		if w.BacklogDrainRatio != nil {
			lw.BacklogDrainRatio = *w.BacklogDrainRatio
		}
		if s.BacklogBytes > 0 {
			lw.BacklogBytes = s.BacklogBytes
		}
	}
	if s.Warmup > 0 {
		lw.Warmup = s.Warmup
	}
	if s.Duration > 0 {
		lw.Duration = s.Duration
	}
	if s.Rate > 0 {
		lw.Rate = s.Rate
	}
	if lw.Rate <= 0 {
		bad("producerRate 0 (OMB's search for the highest rate the consumers keep up with) is not supported: give producerRate, or a rate to run at")
	}
	if lw.Duration <= 0 {
		bad("testDurationMinutes must be > 0")
	}
	// A quick run reports more often than every 10 s.
	lw.ReportInterval = min(lw.ReportInterval, max(lw.Duration/4, time.Second))
	if err := errors.Join(errs...); err != nil {
		return lw, fmt.Errorf("loadgen: OMB workload %s: %w", w.shortName(), err)
	}
	lw.EnsureDefaults()
	if err := lw.Validate(); err != nil {
		return lw, fmt.Errorf("loadgen: OMB workload %s: %w", w.shortName(), err)
	}
	return lw, nil
}

// shortName is the file's base name without .yaml, or the name made
// safe for topic names.
func (w *OMBWorkload) shortName() string {
	if w.File != "" {
		return strings.TrimSuffix(strings.TrimSuffix(filepath.Base(w.File), ".yaml"), ".yml")
	}
	var b strings.Builder
	for _, r := range strings.ToLower(w.Name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return cmp.Or(strings.Trim(b.String(), "-"), "omb")
}

// payloadPath finds payloadFile: as given, then beside the workload
// file, then beside its directory.
func (w *OMBWorkload) payloadPath() (string, error) {
	tries := []string{w.PayloadFile}
	if w.File != "" && !filepath.IsAbs(w.PayloadFile) {
		dir := filepath.Dir(w.File)
		tries = append(tries, filepath.Join(dir, w.PayloadFile), filepath.Join(dir, "..", w.PayloadFile))
	}
	for _, p := range tries {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("payloadFile %q: not found (tried %s)", w.PayloadFile, strings.Join(tries, ", "))
}

func ombMinutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
