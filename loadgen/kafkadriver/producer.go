package kafkadriver

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsamq/samsa/loadgen"
)

// closeFlushTimeout bounds a producer's last flush on Close; records still
// buffered after it fail (their done is called with the client's error).
const closeFlushTimeout = 30 * time.Second

// codecs are the settings' compression names as franz-go codecs.
var codecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// acks are the settings' acks as franz-go's.
var acks = map[string]kgo.Acks{
	loadgen.KafkaAcksNone: kgo.NoAck(), loadgen.KafkaAcksLeader: kgo.LeaderAck(), loadgen.KafkaAcksAll: kgo.AllISRAcks(),
}

// producerOpts are a producer's franz-go options for send options o.
func (d *Driver) producerOpts(o loadgen.ProducerOptions) (_ []kgo.Opt, window int) {
	k := &d.opts.Settings
	window = 1
	switch o.Mode {
	case loadgen.SendAsync:
		window = max(o.MaxInFlight, 1)
	case loadgen.SendBatch:
		window = max(o.MaxInFlight, o.BatchSize, 1)
	}
	opts := []kgo.Opt{
		kgo.RequiredAcks(acks[k.Acks]),
		kgo.ProducerBatchCompression(codecs[k.Compression]),
		kgo.ProducerLinger(k.LingerFor(o.Mode, o.BatchLinger)),
		kgo.MaxBufferedRecords(window),
	}
	if !*k.Idempotent {
		// Idempotent, franz-go allows 5 already (and refuses the option).
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(produceInflight))
	}
	if k.MaxBatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(k.MaxBatchBytes)))
	}
	return opts, window
}

// NewProducer implements loadgen.Driver: a kgo client of its own.
func (d *Driver) NewProducer(_ context.Context, topic string, o loadgen.ProducerOptions) (loadgen.Producer, error) {
	opts, window := d.producerOpts(o)
	cl, err := d.client(opts...)
	if err != nil {
		return nil, err
	}
	return &producer{cl: cl, topic: topic, sync: o.Mode == loadgen.SendSync, window: make(loadgen.Window, window)}, nil
}

type producer struct {
	cl     *kgo.Client
	topic  string
	sync   bool
	window loadgen.Window // async and batch: a token per record not yet answered
}

// Send implements loadgen.Producer. The record's value is payload itself:
// franz-go holds it until the record's promise, and loadgen reuses it only
// once done has run.
func (p *producer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	r := &kgo.Record{Topic: p.topic, Value: payload}
	if key != "" {
		r.Key = []byte(key)
	}
	if p.sync {
		done(p.cl.ProduceSync(ctx, r).FirstErr())
		return
	}
	if err := p.window.Acquire(ctx); err != nil {
		done(err)
		return
	}
	p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
		done(err)
		p.window.Release()
	})
}

// Close implements loadgen.Producer: it flushes what is buffered (bounded
// by closeFlushTimeout) and closes the client, which fails whatever the
// flush left.
func (p *producer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeFlushTimeout)
	defer cancel()
	err := p.cl.Flush(ctx)
	p.cl.Close()
	if err != nil {
		return errors.Join(errors.New("kafkadriver: flush on close"), err)
	}
	return nil
}
