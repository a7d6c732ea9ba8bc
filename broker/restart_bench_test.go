package broker

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRestartTopics times a broker's restart on a table of many
// topics of one queue (SAMSA_BENCH_TOPICS, 200,000 unless set; the
// metadata-scale experiment runs a million): its close (which writes
// topics.json whole) and its start until it serves, registered with a
// name server; cpu-s/op is the process's CPU time over the restart (the
// name server's too), steadier than the wall on a shared machine. The table is made once, straight through the topic
// manager, with its last 10% left in the topic log, as a run of creates
// leaves it.
func BenchmarkRestartTopics(b *testing.B) {
	n := 200_000
	if s := os.Getenv("SAMSA_BENCH_TOPICS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	ns := startNamesrv(b)
	dir := b.TempDir()
	withNS := withNamesrv(ns.Addr(), nil)
	br := newBroker(b, dir, withNS)
	br.topics.compactAt = 1 << 30
	fill := func(from, to int) {
		for i := from; i < to; i += 10_000 {
			batch := make([]TopicConfig, 0, 10_000)
			for j := i; j < min(i+10_000, to); j++ {
				batch = append(batch, newTopicConfig(fmt.Sprintf("ms-%07d", j), 1, PermRead|PermWrite))
			}
			if _, err := br.topics.updateList(batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill(0, n*9/10)
	if err := br.topics.save(); err != nil {
		b.Fatal(err)
	}
	fill(n*9/10, n)
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var closeT, newT, startT time.Duration
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		br = newBroker(b, dir, func(c *Config) {
			withNS(c)
			if os.Getenv("SAMSA_BENCH_LOG") != "" {
				c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
		})
		t2 := time.Now()
		if err := br.Start(); err != nil {
			b.Fatal(err)
		}
		closeT += t1.Sub(t0)
		newT += t2.Sub(t1)
		startT += time.Since(t1)
		if got := br.topics.count(); got < n {
			b.Fatalf("%d topics after the restart, want %d", got, n)
		}
	}
	b.StopTimer()
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(closeT.Seconds()/float64(b.N), "close-s/op")
	b.ReportMetric(startT.Seconds()/float64(b.N), "start-s/op")
	b.ReportMetric(newT.Seconds()/float64(b.N), "load-s/op")
	if err := br.Close(); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the process's user and system CPU time so far (the name
// server's included: it runs in the process, as in metadata-scale).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSlaveCopyTopics times a new slave's first copy of its
// master's table (SAMSA_BENCH_TOPICS topics, 200,000 unless set), paged,
// and then a round with nothing changed (the delta).
func BenchmarkSlaveCopyTopics(b *testing.B) {
	n := 200_000
	if s := os.Getenv("SAMSA_BENCH_TOPICS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	ns := startNamesrv(b)
	master := newBroker(b, "", withNamesrv(ns.Addr(), nil))
	master.topics.compactAt = 1 << 30
	for i := 0; i < n; i += 10_000 {
		batch := make([]TopicConfig, 0, 10_000)
		for j := i; j < min(i+10_000, n); j++ {
			batch = append(batch, newTopicConfig(fmt.Sprintf("ms-%07d", j), 1, PermRead|PermWrite))
		}
		if _, err := master.topics.updateList(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := master.Start(); err != nil {
		b.Fatal(err)
	}
	defer master.Close()
	b.ResetTimer()
	var copyT, deltaT time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		slave := newBroker(b, "", asSlave(ns.Addr(), 1, nil))
		if err := slave.Start(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		if err := slave.repl.meta.round(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := slave.repl.meta.round(); err != nil {
			b.Fatal(err)
		}
		copyT += t1.Sub(t0)
		deltaT += time.Since(t1)
		b.StopTimer()
		if got := slave.topics.count(); got < n || slave.repl.meta.topicCopies.Load() != 1 {
			b.Fatalf("%d topics on the slave in %d copies", got, slave.repl.meta.topicCopies.Load())
		}
		if err := slave.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(copyT.Seconds()/float64(b.N), "copy-s/op")
	b.ReportMetric(deltaT.Seconds()/float64(b.N), "unchanged-round-s/op")
}
