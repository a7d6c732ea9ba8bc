package txn

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

var verbose = flag.Bool("txn.log", false, "show the logs in tests")

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

// memProgress is the check progress as the broker's consumer offsets keep
// it; it outlives a restart (as consumerOffset.json does once flushed).
type memProgress struct {
	mu   sync.Mutex
	offs map[string]int64
}

func (p *memProgress) Query(topic string) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	off, ok := p.offs[topic]
	return off, ok
}

func (p *memProgress) Commit(topic string, off int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offs[topic] = off
}

// producer is a fake producer connection: the check-backs it takes go to
// its rig's list; a full one takes none.
type producer struct {
	r           *rig
	name, group string
	full        bool
}

// sent is a check-back a producer took.
type sent struct {
	to  string
	cmd *protocol.Command
}

func (p *producer) RequestOneway(cmd *protocol.Command) bool {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	if p.full {
		return false
	}
	p.r.mu.sent = append(p.r.mu.sent, sent{p.name, cmd})
	return true
}

var storeHost = netip.MustParseAddrPort("127.0.0.1:10911")

const (
	storeDir  = "/s"
	configDir = "/s/config"
)

// rig is a store on a crashable in-memory file system and a Service on
// it, both on one fake clock, with fake producers and an append that can
// be made to fail.
type rig struct {
	t        *testing.T
	fs       *vfs.MemFS
	clock    *clock
	now      func() time.Time // clock.Now, or time.Now for Run's own test
	st       *storage.Store
	svc      *Service
	progress *memProgress
	mut      func(*Config)

	mu struct {
		sync.Mutex
		online map[string]*producer // by name
		sent   []sent               // check-backs taken, in order
		// failOps: the next settlement stores its final messages and
		// fails its op records, as the combiner may split them; failAll:
		// it stores nothing.
		failOps, failAll bool
	}
}

// newRig opens a store and a Service on it: timeout 10 s, at most 3
// check-backs; mut changes the Config.
func newRig(t *testing.T, mut func(*Config)) *rig {
	r := &rig{t: t, fs: vfs.NewMem(), clock: newClock(), mut: mut, progress: &memProgress{offs: map[string]int64{}}}
	r.now = r.clock.Now
	r.mu.online = map[string]*producer{}
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
	cfg := Config{Store: st, FS: r.fs, ConfigDir: configDir, Progress: r.progress,
		Timeout: 10 * time.Second, CheckInterval: time.Minute, CheckMax: 3, BrokerName: "b1",
		StoreHost: func() netip.AddrPort { return storeHost }, Producers: r.producers, Append: r.append,
		Now: r.now, Logger: quietLogger()}
	if r.mut != nil {
		r.mut(&cfg)
	}
	svc, err := New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.svc = svc
}

// producers is Config.Producers: the online members of group, by name.
func (r *rig) producers(group string) []Producer {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for n, p := range r.mu.online {
		if p.group == group {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]Producer, len(names))
	for i, n := range names {
		out[i] = r.mu.online[n]
	}
	return out
}

// setProducer puts producer name of group online (a full one takes no
// request), or takes it offline.
func (r *rig) setProducer(name, group string, full, online bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !online {
		delete(r.mu.online, name)
		return
	}
	r.mu.online[name] = &producer{r: r, name: name, group: group, full: full}
}

// takeSent returns the check-backs taken since the last call.
func (r *rig) takeSent() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.mu.sent
	r.mu.sent = nil
	return out
}

// append is Config.Append: Store.AppendBatch, unless a failure was asked
// for.
func (r *rig) append(msgs []*storage.Message) ([]storage.AppendResult, []error, error) {
	r.mu.Lock()
	failOps, failAll := r.mu.failOps, r.mu.failAll
	r.mu.failOps, r.mu.failAll = false, false
	r.mu.Unlock()
	errFail := storage.ErrDiskFull
	switch {
	case failAll:
		return nil, nil, errFail
	case failOps:
		n := 0
		for n < len(msgs) && msgs[n].Topic != OpHalfTopic {
			n++
		}
		res := make([]storage.AppendResult, len(msgs))
		errs := make([]error, len(msgs))
		if n > 0 {
			got, err := r.st.AppendBatch(context.Background(), msgs[:n])
			if err != nil {
				return nil, nil, err
			}
			copy(res, got)
			r.waitDispatched()
		}
		for i := n; i < len(msgs); i++ {
			errs[i] = errFail
		}
		return res, errs, errFail
	}
	res, err := r.st.AppendBatch(context.Background(), msgs)
	// The index catches up before the Service goes on, so what a round
	// reads of the op queue's end after its own appends is the same in
	// every run.
	r.waitDispatched()
	return res, nil, err
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

// restart closes the store cleanly and opens it and a Service again.
func (r *rig) restart() {
	r.t.Helper()
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.open()
}

// prepare stores a prepared send to topic/queue as the broker does
// (ToHalf) and returns its half record once indexed.
func (r *rig) prepare(topic string, queue int32, body string, props map[string]string) record.Record {
	r.t.Helper()
	enc, err := record.EncodeProperties(props)
	if err != nil {
		r.t.Fatal(err)
	}
	m := &storage.Message{Topic: topic, QueueID: queue, Body: []byte(body), Properties: enc, SysFlag: record.TransactionPrepared,
		BornTimestamp: r.now().UnixMilli(), BornHost: storeHost, StoreHost: storeHost, Flag: 7, ReconsumeTimes: 1}
	if !IsPrepared(m.SysFlag, m.Properties) {
		r.t.Fatal("a prepared send is not IsPrepared")
	}
	ToHalf(m, props[PropProducerGroup])
	res, err := r.st.Append(context.Background(), m)
	if err != nil {
		r.t.Fatal(err)
	}
	r.waitDispatched()
	recs := r.read(HalfTopic, 0, res.QueueOffset)
	if len(recs) == 0 {
		r.t.Fatalf("half %d not found", res.QueueOffset)
	}
	return recs[0]
}

// waitDispatched waits until the store has indexed all it holds.
func (r *rig) waitDispatched() {
	r.t.Helper()
	for end := time.Now().Add(30 * time.Second); r.st.DispatchedOffset() < r.st.WrittenOffset(); {
		if time.Now().After(end) {
			r.t.Fatalf("the store indexed up to %d of %d", r.st.DispatchedOffset(), r.st.WrittenOffset())
		}
		time.Sleep(time.Millisecond)
	}
}

// read returns topic/queue's records from offset from.
func (r *rig) read(topic string, queue int32, from int64) []record.Record {
	r.t.Helper()
	var out []record.Record
	for off := from; ; {
		res, err := r.st.GetMessages(topic, queue, off, 1024, 16<<20, nil)
		if err != nil {
			r.t.Fatal(err)
		}
		if res.Status != storage.Found {
			return out
		}
		for i, raw := range res.Records {
			var rec record.Record
			if err := record.Decode(raw, record.NoPhys, &rec); err != nil {
				r.t.Fatal(err)
			}
			rec.QueueOffset = res.QueueOffsets[i]
			out = append(out, rec)
		}
		off = res.NextOffset
	}
}
