package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// popBenchRounds is how many times BenchmarkPopVsPush drains by each
// mode, alternated.
const popBenchRounds = 7

// BenchmarkPopVsPush drains backlogs of b.N 256-byte messages on 8 queues
// (embedded broker, async flush) by push (one push consumer: a long-poll
// pull per queue, offsets committed in the background) and by POP (1 and
// 8 consumers, each popping up to 32 at a time and acknowledging them
// with one BATCH_ACK_MESSAGE), alternating the three modes for
// popBenchRounds rounds so that a machine shared with other work loads
// them alike. It reports each mode's median msgs/s and the median of the
// rounds' POP/push ratios, and each mode's median CPU time (broker and
// clients, one process) per message:
//
//	go test ./client -run '^$' -bench PopVsPush -benchtime 50000x
func BenchmarkPopVsPush(b *testing.B) {
	c := startCluster(b, 1, nil)
	body := make([]byte, benchBody)
	fill := func() string {
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
	push := func(topic string) float64 {
		var n atomic.Int64
		done := make(chan struct{})
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
		rate := float64(b.N) / time.Since(start).Seconds()
		pc.Close()
		return rate
	}
	pop := func(topic string, consumers int) float64 {
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
		return float64(b.N) / time.Since(start).Seconds()
	}
	if b.N < 1000 {
		return // the framework's probe run: too short to measure
	}
	// cpu runs a drain and returns its rate and the process's CPU time
	// (broker and clients) per message: on a machine shared with other
	// work the rate follows the scheduler, the CPU per message less so.
	cpu := func(drain func() float64) (float64, float64) {
		var r0, r1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0) // cannot fail for RUSAGE_SELF
		rate := drain()
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		us := func(r *syscall.Rusage) float64 {
			return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e3
		}
		return rate, (us(&r1) - us(&r0)) / float64(b.N)
	}
	var rates, cpus [3][]float64
	var r1, r8 []float64
	b.SetBytes(benchBody * popBenchRounds * 3)
	for range popBenchRounds {
		t1, t2, t3 := fill(), fill(), fill()
		p, pc := cpu(func() float64 { return push(t1) })
		p1, c1 := cpu(func() float64 { return pop(t2, 1) })
		p8, c8 := cpu(func() float64 { return pop(t3, 8) })
		for i, v := range [3][2]float64{{p, pc}, {p1, c1}, {p8, c8}} {
			rates[i], cpus[i] = append(rates[i], v[0]), append(cpus[i], v[1])
		}
		r1, r8 = append(r1, p1/p), append(r8, p8/p)
		b.Logf("round: push %.0f msgs/s %.1f µs CPU/msg, pop×1 %.0f %.1f, pop×8 %.0f %.1f", p, pc, p1, c1, p8, c8)
	}
	for i, mode := range []string{"push", "pop1", "pop8"} {
		b.ReportMetric(median(rates[i]), mode+"-msgs/s")
		b.ReportMetric(median(cpus[i]), mode+"-cpu-µs/msg")
	}
	b.ReportMetric(median(r1), "pop1/push")
	b.ReportMetric(median(r8), "pop8/push")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
