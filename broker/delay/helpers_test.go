package delay

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

var verbose = flag.Bool("delay.log", false, "show the logs in tests")

func quietLogger() *slog.Logger {
	if *verbose {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// clock is a fake clock the tests move by hand; the store stamps records
// with it too.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// rig is a store on a crashable in-memory file system and a Service on
// it, both on one fake clock.
type rig struct {
	t     *testing.T
	fs    *vfs.MemFS
	clock *clock
	now   func() time.Time // clock.Now, or time.Now for the loops' own test
	st    *storage.Store
	svc   *Service
	mut   func(*Config)
}

const (
	storeDir  = "/s"
	configDir = "/s/config"
	timerDir  = "/s/timerwheel"
)

// newRig opens a store and a Service with levels "5s 10s" and timers (up
// to 10 minutes ahead) on;
// mut changes the Config.
func newRig(t *testing.T, mut func(*Config)) *rig {
	r := &rig{t: t, fs: vfs.NewMem(), clock: newClock(), mut: mut}
	r.now = r.clock.Now
	r.open()
	t.Cleanup(func() { r.st.Close() })
	return r
}

func (r *rig) open() {
	r.t.Helper()
	o := storage.Options{Dir: storeDir, FS: r.fs, SegmentSize: 1 << 20, Logger: quietLogger(), Clock: r.now}
	o.Flush.Policy = storage.FlushSync // an acknowledged append survives a power loss
	o.Retention.MaxAge, o.Retention.DiskRatio = -1, -1
	st, err := storage.Open(o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.st = st
	cfg := Config{Store: st, FS: r.fs, ConfigDir: configDir, TimerDir: timerDir, Levels: "5s 10s", Timers: true,
		TimerMaxDelaySec: 600, // a small wheel file
		Now:              r.now, Logger: quietLogger()}
	if r.mut != nil {
		r.mut(&cfg)
	}
	svc, err := New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.svc = svc
	st.OnDispatch(svc.OnDispatch)
}

// crash loses power (every unsynced byte lost) and opens the store and
// the Service again on what is left, as a restart would.
func (r *rig) crash() {
	r.t.Helper()
	fs := r.fs.CrashClone(nil)
	r.st.Close() // on the old file system: the new one is what the disk kept
	r.fs = fs
	r.open()
}

// restart closes the Service and the store cleanly and opens them again.
func (r *rig) restart() {
	r.t.Helper()
	if err := r.svc.Close(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.open()
}

// send stores a message to topic/queue 0 with props as a broker would:
// through Defer. It waits until the store has indexed it.
func (r *rig) send(topic, body string, props map[string]string) *storage.Message {
	r.t.Helper()
	enc, err := record.EncodeProperties(props)
	if err != nil {
		r.t.Fatal(err)
	}
	m := &storage.Message{Topic: topic, Body: []byte(body), Properties: enc, BornTimestamp: r.now().UnixMilli(),
		ReconsumeTimes: 2, Flag: 7}
	if err := r.svc.Defer(m); err != nil {
		r.t.Fatal(err)
	}
	res, err := r.st.Append(context.Background(), m)
	if err != nil {
		r.t.Fatal(err)
	}
	r.waitIndexed(m.Topic, m.QueueID, res.QueueOffset+1)
	return m
}

// waitIndexed waits until topic/queue holds n records.
func (r *rig) waitIndexed(topic string, queue int32, n int64) {
	r.t.Helper()
	for end := time.Now().Add(30 * time.Second); r.st.MaxQueueOffset(topic, queue) < n; {
		if time.Now().After(end) {
			r.t.Fatalf("%s/%d holds %d records, want %d", topic, queue, r.st.MaxQueueOffset(topic, queue), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// records reads topic/queue whole, once the store has indexed all it
// holds.
func (r *rig) records(topic string, queue int32) []record.Record {
	r.t.Helper()
	for end := time.Now().Add(30 * time.Second); r.st.DispatchedOffset() < r.st.WrittenOffset(); {
		if time.Now().After(end) {
			r.t.Fatalf("the store indexed up to %d of %d", r.st.DispatchedOffset(), r.st.WrittenOffset())
		}
		time.Sleep(time.Millisecond)
	}
	return readAll(r.t, r.st, topic, queue)
}

func readAll(t *testing.T, st *storage.Store, topic string, queue int32) []record.Record {
	t.Helper()
	var out []record.Record
	for off := int64(0); ; {
		res, err := st.GetMessages(topic, queue, off, 1024, 16<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != storage.Found {
			return out
		}
		for _, raw := range res.Records {
			var rec record.Record
			if err := record.Decode(raw, record.NoPhys, &rec); err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
		off = res.NextOffset
	}
}

// bodies counts the records by body.
func bodies(recs []record.Record) map[string]int {
	n := map[string]int{}
	for _, r := range recs {
		n[string(r.Body)]++
	}
	return n
}

// props are a record's user properties.
func props(rec record.Record) map[string]string { return record.ParseProperties(rec.UserProperties()) }

func newMsg(topic string, queue int32, body string, props []byte) *storage.Message {
	return &storage.Message{Topic: topic, QueueID: queue, Body: []byte(body), Properties: props}
}
