package broker

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// BenchmarkTimers measures the timer wheel: the broker's RSS growth with
// N timers pending (due in an hour), then the lateness of 10,000 timers
// falling due within one second (10k due/s) while those N stay pending:
// the delivered copy's store time minus the time asked for (never
// negative). Sizes: -bench 'Timers/pending=1000000' for the 1M target.
//
//	go test -run '^$' -bench Timers -benchtime 1x ./broker/
func BenchmarkTimers(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				benchTimers(b, n)
			}
		})
	}
}

func benchTimers(b *testing.B, pending int) {
	br := newBroker(b, b.TempDir(), func(c *Config) { c.MappedFileSizeCommitLog = 256 << 20 })
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	c := dialRaw(b, br.Addr())
	c.call(createTopicReq("bt", 8))
	runtime.GC()
	rss0 := rssBytes()
	far := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	start := time.Now()
	sendPipelined(b, c, pending, func(i int) map[string]string { return map[string]string{"TIMER_DELIVER_MS": far} })
	for timersPending(br) < int64(pending) {
		time.Sleep(10 * time.Millisecond)
	}
	enq := time.Since(start)
	runtime.GC()
	rss1 := rssBytes()
	disk := diskBytes(filepath.Join(br.cfg.StorePathRootDir, "timerwheel"))

	const due = 10_000
	base := time.Now().Add(3 * time.Second).UnixMilli()
	sendPipelined(b, c, due, func(i int) map[string]string {
		return map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(base+int64(i)/10, 10)} // 10 a ms: 1 s
	})
	var late []int64
	pc := dialRaw(b, br.Addr())
	deadline := time.Now().Add(time.Minute)
	offs := make([]int64, 8)
	for len(late) < due && time.Now().Before(deadline) {
		got := false
		for q := int32(0); q < 8; q++ {
			r := pc.call(pullReq("bench", "bt", q, offs[q], 512, 0, "*"))
			if r.Code != protocol.Success {
				continue
			}
			got = true
			for _, rec := range decodeRecords(b, r.Body) {
				offs[q]++
				v, _ := record.LookupProperty(rec.UserProperties(), "TIMER_DELIVER_MS")
				want, _ := strconv.ParseInt(string(v), 10, 64)
				late = append(late, rec.StoreTimestamp-want)
			}
		}
		if !got {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(late) < due {
		b.Fatalf("%d of %d due timers delivered", len(late), due)
	}
	slices.Sort(late)
	b.ReportMetric(float64(late[len(late)/2]), "p50-late-ms")
	b.ReportMetric(float64(late[len(late)*99/100]), "p99-late-ms")
	b.ReportMetric(float64(late[len(late)-1]), "max-late-ms")
	b.ReportMetric(float64(late[0]), "min-late-ms")
	b.ReportMetric(float64(rss1-rss0)/(1<<20), "rss-growth-MiB")
	b.ReportMetric(float64(disk)/(1<<20), "timer-disk-MiB")
	b.ReportMetric(float64(pending)/enq.Seconds(), "enqueued/s")
}

// timersPending is the stats' timer_pending.
func timersPending(br *Broker) int64 {
	for _, s := range br.delay.Stats() {
		if s.Name == "timer_pending" {
			return s.Value.(int64)
		}
	}
	return 0
}

// sendPipelined sends n messages to bt (queue i%8) with props(i), 256 in
// flight.
func sendPipelined(b *testing.B, c *rawClient, n int, props func(i int) map[string]string) {
	inflight := make(chan (<-chan *protocol.Command), 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range inflight {
			if r := <-ch; r.Code != protocol.Success {
				b.Errorf("send: %s", r)
			}
		}
	}()
	for i := 0; i < n; i++ {
		inflight <- c.start(sendReq("bt", int32(i%8), []byte("timer-body-0123456789"), props(i)))
	}
	close(inflight)
	<-done
}

// rssBytes is this process's resident set (Linux), 0 elsewhere.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// diskBytes is the space allocated to the files under dir (sparse files
// count what they use).
func diskBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}

// BenchmarkDelayLevel: 50,000 messages sent at delay level 1 (1 s here)
// as fast as one pipelined connection goes; reports the level loop's
// delivery rate and lateness (a copy's store time minus its schedule
// record's store time plus 1 s).
func BenchmarkDelayLevel(b *testing.B) {
	const n = 50_000
	for i := 0; i < b.N; i++ {
		br := newBroker(b, b.TempDir(), func(c *Config) {
			c.MappedFileSizeCommitLog = 256 << 20
			c.MessageDelayLevel = "1s"
		})
		if err := br.Start(); err != nil {
			b.Fatal(err)
		}
		c := dialRaw(b, br.Addr())
		c.call(createTopicReq("bt", 8))
		sendPipelined(b, c, n, func(i int) map[string]string { return map[string]string{"DELAY": "1", "KEYS": strconv.Itoa(i)} })
		delivered := func() (sum int64) {
			for q := int32(0); q < 8; q++ {
				sum += br.store.MaxQueueOffset("bt", q)
			}
			return sum
		}
		for delivered() < n {
			time.Sleep(10 * time.Millisecond)
		}
		key := func(r *record.Record) string {
			v, _ := record.LookupProperty(r.UserProperties(), "KEYS")
			return string(v)
		}
		due := map[string]int64{} // KEYS → due
		for _, rec := range storeRecords(b, br, ScheduleTopic, 0) {
			due[key(&rec)] = rec.StoreTimestamp + 1000
		}
		var late []int64
		first, last := int64(1<<62), int64(0)
		for q := int32(0); q < 8; q++ {
			for _, rec := range storeRecords(b, br, "bt", q) {
				late = append(late, rec.StoreTimestamp-due[key(&rec)])
				first, last = min(first, rec.StoreTimestamp), max(last, rec.StoreTimestamp)
			}
		}
		br.Close()
		slices.Sort(late)
		b.ReportMetric(float64(late[len(late)/2]), "p50-late-ms")
		b.ReportMetric(float64(late[len(late)*99/100]), "p99-late-ms")
		b.ReportMetric(float64(late[0]), "min-late-ms")
		b.ReportMetric(float64(n)/(float64(max(last-first, 1))/1000), "delivered/s")
	}
}

// storeRecords reads every record of (topic, queue) from the store.
func storeRecords(b *testing.B, br *Broker, topic string, queue int32) []record.Record {
	var out []record.Record
	for off := int64(0); ; {
		res, err := br.store.GetMessages(topic, queue, off, 1024, 0, nil)
		if err != nil || len(res.Records) == 0 {
			return out
		}
		for _, raw := range res.Records {
			var r record.Record
			if err := record.Decode(raw, record.NoPhys, &r); err != nil {
				b.Fatal(err)
			}
			out = append(out, r)
		}
		off = res.NextOffset
	}
}
