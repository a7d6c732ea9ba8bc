package kafkadriver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsamq/samsa/loadgen"
)

// deadline is how long a test waits for an event (messages arriving,
// acknowledgements): generous, for a loaded machine; nothing is timed.
const deadline = 60 * time.Second

// newCluster starts a kfake cluster of three brokers, closed with the test.
func newCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newDriver is a driver on c with settings k, closed with the test.
func newDriver(t *testing.T, c *kfake.Cluster, k loadgen.Kafka) *Driver {
	t.Helper()
	d, err := New(Options{Brokers: c.ListenAddrs(), Settings: k})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// payload is message i's value: its name, then size-len(name) zeros
// (compressible, so a codec has something to do).
func payload(i, size int) []byte {
	p := make([]byte, size)
	copy(p, fmt.Sprintf("msg-%08d", i))
	return p
}

// produce sends messages from..to-1 to topic in mode (keyed by i mod 16
// when keyed) and waits until every one is acknowledged without error.
func produce(t *testing.T, d *Driver, topic string, mode loadgen.SendMode, from, to int, keyed bool) {
	t.Helper()
	p, err := d.NewProducer(context.Background(), topic, loadgen.ProducerOptions{
		Mode: mode, BatchSize: 32, BatchLinger: time.Millisecond, MaxInFlight: 64})
	require.NoError(t, err)
	var mu sync.Mutex
	var errs []error
	acked := make(chan struct{}, to-from)
	for i := from; i < to; i++ {
		key := ""
		if keyed {
			key = fmt.Sprintf("k%d", i%16)
		}
		p.Send(context.Background(), key, payload(i, 1024), func(err error) {
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			acked <- struct{}{}
		})
	}
	timeout := time.After(deadline)
	for i := from; i < to; i++ {
		select {
		case <-acked:
		case <-timeout:
			t.Fatalf("%d of %d sends answered after %v", i-from, to-from, deadline)
		}
	}
	require.NoError(t, p.Close())
	require.Empty(t, errs)
}

// received collects the message names a consumer's handler sees.
type received struct {
	mu   sync.Mutex
	seen map[string]int // name -> times received
}

func newReceived() *received { return &received{seen: map[string]int{}} }

func (r *received) handler(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[string(p[:12])]++
}

func (r *received) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *received) has(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[fmt.Sprintf("msg-%08d", i)] > 0
}

// waitFor waits until r holds n distinct messages.
func (r *received) waitFor(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return r.distinct() >= n }, deadline, 10*time.Millisecond,
		"received %d distinct of %d", r.distinct(), n)
	require.Equal(t, n, r.distinct())
}

// consume starts a group member on topic.
func consume(t *testing.T, d *Driver, topic, group string, mode loadgen.ConsumeMode) (loadgen.Consumer, *received) {
	t.Helper()
	r := newReceived()
	c, err := d.NewConsumer(context.Background(), topic, group,
		loadgen.ConsumerOptions{Mode: mode, PullInterval: 5 * time.Millisecond, Members: 1}, r.handler)
	require.NoError(t, err)
	return c, r
}

// batches records what the cluster's produce requests carried.
type batches struct {
	mu          sync.Mutex
	acks        map[int16]bool
	producerIDs map[bool]bool // producer id >= 0 (idempotent)
	codecs      map[int8]bool // attributes & 7
}

// watchProduce records every produce request c handles (without handling
// it: the cluster answers as usual).
func watchProduce(c *kfake.Cluster) *batches {
	b := &batches{acks: map[int16]bool{}, producerIDs: map[bool]bool{}, codecs: map[int8]bool{}}
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		b.mu.Lock()
		defer b.mu.Unlock()
		b.acks[pr.Acks] = true
		for _, tp := range pr.Topics {
			for _, pp := range tp.Partitions {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(pp.Records); err == nil {
					b.producerIDs[rb.ProducerID >= 0] = true
					b.codecs[int8(rb.Attributes&7)] = true
				}
			}
		}
		return nil, nil, false
	})
	return b
}

func (b *batches) snapshot() (acks map[int16]bool, idempotent map[bool]bool, codecs map[int8]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.acks, b.producerIDs, b.codecs
}
