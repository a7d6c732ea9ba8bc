package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPopVsPush drains a backlog of b.N 256-byte messages on 8
// queues (embedded broker, async flush) by push (one push consumer: a
// long-poll pull per queue, offsets committed in the background) and by
// POP (consumers each popping up to 32 at a time and acknowledging them
// with one BATCH_ACK_MESSAGE, every pop and ack on disk in pop.wal before
// its answer), in msgs/s:
//
//	go test ./client -run '^$' -bench PopVsPush -benchtime 20000x -count 5
func BenchmarkPopVsPush(b *testing.B) {
	c := startCluster(b, 1, nil)
	body := make([]byte, benchBody)
	fill := func(b *testing.B) string {
		topic := fmt.Sprintf("bench-pop-%d", benchSeq.Add(1))
		c.createTopic(topic, 8)
		p := newTestProducer(b, c, func(o *ProducerOptions) { o.Batch = BatchOptions{MaxMessages: 128} })
		var wg sync.WaitGroup
		wg.Add(b.N)
		for i := 0; i < b.N; i++ {
			p.SendAsync(context.Background(), &Message{Topic: topic, Body: body}, func(_ *SendResult, err error) { wg.Done() })
		}
		wg.Wait()
		c.waitMessages(topic, int64(b.N))
		return topic
	}
	b.Run("mode=push/consumers=1", func(b *testing.B) {
		topic := fill(b)
		var n atomic.Int64
		done := make(chan struct{})
		b.SetBytes(benchBody)
		b.ResetTimer()
		start := time.Now()
		pc := newTestPushConsumer(b, c, fmt.Sprint("bench-push-", benchSeq.Add(1)), func(context.Context, *MessageExt) error {
			if n.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		}, func(o *PushConsumerOptions) { o.PullBatchSize = benchPullBatch })
		if err := pc.Subscribe(topic, "*"); err != nil {
			b.Fatal(err)
		}
		if err := pc.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		<-done
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		b.StopTimer()
		pc.Close()
	})
	for _, consumers := range []int{1, 8} {
		b.Run(fmt.Sprintf("mode=pop/consumers=%d", consumers), func(b *testing.B) {
			topic := fill(b)
			group := fmt.Sprint("bench-pop-", benchSeq.Add(1))
			var pcs []*PopConsumer
			for range consumers {
				pc, err := NewPopConsumer(PopConsumerOptions{ClientOptions: c.clientOptions(), Group: group, Topic: topic})
				if err != nil {
					b.Fatal(err)
				}
				defer pc.Close()
				pcs = append(pcs, pc)
			}
			var n atomic.Int64
			var wg sync.WaitGroup
			b.SetBytes(benchBody)
			b.ResetTimer()
			start := time.Now()
			for _, pc := range pcs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n.Load() < int64(b.N) {
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						msgs, err := pc.Receive(ctx, 32, time.Minute)
						cancel()
						if err != nil {
							b.Error(err)
							return
						}
						if err := pc.AckAll(context.Background(), msgs); err != nil {
							b.Error(err)
							return
						}
						n.Add(int64(len(msgs)))
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
