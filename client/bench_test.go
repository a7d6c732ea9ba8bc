package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	rmqconsumer "github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"
)

// Benchmarks of this client beside the official Go client, against the
// same embedded broker (async flush): sends and consumption of 256-byte
// messages, in msgs/s. Compare within one run:
//
//	go test -run '^$' -bench 'Produce|Consume' ./client
const benchBody = 256

// benchPullBatch is the push consumers' pull batch in BenchmarkConsume
// (RocketMQ's default, as the official client uses).
var benchPullBatch = 32

var benchSeq atomic.Int64

func benchTopic(b *testing.B, c *testCluster) string {
	t := fmt.Sprintf("bench-%d", benchSeq.Add(1))
	c.createTopic(t, 4)
	return t
}

func BenchmarkProduce(b *testing.B) {
	c := startCluster(b, 1, nil)
	body := make([]byte, benchBody)
	for _, mode := range []string{"sync", "async", "batch"} {
		b.Run("client=samsa/mode="+mode, func(b *testing.B) {
			topic := benchTopic(b, c)
			p := newTestProducer(b, c, func(o *ProducerOptions) {
				if mode == "batch" {
					o.Batch = BatchOptions{MaxMessages: 64, Linger: time.Millisecond}
				}
			})
			p.Send(context.Background(), &Message{Topic: topic, Body: body}) // route, connection
			b.SetBytes(benchBody)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			switch mode {
			case "sync":
				b.SetParallelism(16)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := p.Send(context.Background(), &Message{Topic: topic, Body: body}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			default:
				var wg sync.WaitGroup
				wg.Add(b.N)
				for i := 0; i < b.N; i++ {
					p.SendAsync(context.Background(), &Message{Topic: topic, Body: body}, func(_ *SendResult, err error) {
						if err != nil {
							b.Error(err)
						}
						wg.Done()
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
	for _, mode := range []string{"sync", "async"} {
		b.Run("client=official/mode="+mode, func(b *testing.B) {
			topic := benchTopic(b, c)
			op, err := rmq.NewProducer(
				rmqproducer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
				rmqproducer.WithGroupName("bench-official"),
				rmqproducer.WithInstanceName(fmt.Sprintf("bench-official-%d", benchSeq.Add(1))),
			)
			if err != nil {
				b.Fatal(err)
			}
			if err := op.Start(); err != nil {
				b.Fatal(err)
			}
			defer op.Shutdown()
			op.SendSync(context.Background(), primitive.NewMessage(topic, body))
			b.SetBytes(benchBody)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			switch mode {
			case "sync":
				b.SetParallelism(16)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := op.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			case "async":
				var wg sync.WaitGroup
				wg.Add(b.N)
				sem := make(chan struct{}, 10000) // the same window as ours
				for i := 0; i < b.N; i++ {
					sem <- struct{}{}
					err := op.SendAsync(context.Background(), func(_ context.Context, _ *primitive.SendResult, err error) {
						if err != nil {
							b.Error(err)
						}
						<-sem
						wg.Done()
					}, primitive.NewMessage(topic, body))
					if err != nil {
						b.Fatal(err)
					}
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

func BenchmarkConsume(b *testing.B) {
	c := startCluster(b, 1, nil)
	body := make([]byte, benchBody)
	fill := func(b *testing.B, topic string) {
		p := newTestProducer(b, c, func(o *ProducerOptions) { o.Batch = BatchOptions{MaxMessages: 128} })
		var wg sync.WaitGroup
		wg.Add(b.N)
		for i := 0; i < b.N; i++ {
			p.SendAsync(context.Background(), &Message{Topic: topic, Body: body}, func(_ *SendResult, err error) { wg.Done() })
		}
		wg.Wait()
		c.waitMessages(topic, int64(b.N))
	}
	b.Run("client=samsa", func(b *testing.B) {
		topic := benchTopic(b, c)
		fill(b, topic)
		var n atomic.Int64
		done := make(chan struct{})
		b.SetBytes(benchBody)
		b.ResetTimer()
		start := time.Now()
		pc := newTestPushConsumer(b, c, fmt.Sprint("bench-samsa-", benchSeq.Add(1)), func(context.Context, *MessageExt) error {
			if n.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		}, func(o *PushConsumerOptions) { o.PullBatchSize = benchPullBatch })
		pc.Subscribe(topic, "*")
		if err := pc.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		<-done
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		b.StopTimer()
		pc.Close()
	})
	b.Run("client=official", func(b *testing.B) {
		topic := benchTopic(b, c)
		fill(b, topic)
		var n atomic.Int64
		done := make(chan struct{})
		b.SetBytes(benchBody)
		b.ResetTimer()
		start := time.Now()
		pc, err := rmq.NewPushConsumer(
			rmqconsumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
			rmqconsumer.WithGroupName(fmt.Sprint("bench-official-", benchSeq.Add(1))),
			rmqconsumer.WithInstance(fmt.Sprint("bench-official-c-", benchSeq.Add(1))),
			rmqconsumer.WithConsumeFromWhere(rmqconsumer.ConsumeFromFirstOffset),
		)
		if err != nil {
			b.Fatal(err)
		}
		pc.Subscribe(topic, rmqconsumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (rmqconsumer.ConsumeResult, error) {
			if n.Add(int64(len(msgs))) >= int64(b.N) {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			return rmqconsumer.ConsumeSuccess, nil
		})
		if err := pc.Start(); err != nil {
			b.Fatal(err)
		}
		<-done
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		b.StopTimer()
		pc.Shutdown()
	})
}
