package pop

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// clock is a fake clock the tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

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

const (
	storeDir = "/s"
	popDir   = "/s/pop"
	broker   = "broker-a"
	topic    = "T"
	group    = "G"
)

// rig is a store on a crashable in-memory file system and a Service on
// it, both on one fake clock.
type rig struct {
	t      *testing.T
	fs     *vfs.MemFS
	clock  *clock
	st     *storage.Store
	svc    *Service
	maxRe  int32
	queues int32
	// syncInterval and backoff are the next open's Config.SyncInterval
	// and Config.Backoff.
	syncInterval time.Duration
	backoff      func(int32) time.Duration
	// commit and committed are the next open's Config.Commit and
	// Config.Committed.
	commit    func(group, topic string, qid int32, off int64) error
	committed func(group, topic string, qid int32) (int64, bool)
	// cur is svc for the store's dispatch callback (reopenService swaps it).
	cur atomic.Pointer[Service]
}

func newRig(t *testing.T, queues int32) *rig {
	r := &rig{t: t, fs: vfs.NewMem(), clock: &clock{now: time.UnixMilli(1_700_000_000_000)}, maxRe: 2, queues: queues}
	r.open()
	t.Cleanup(func() {
		_ = r.svc.Close()
		_ = r.st.Close()
	})
	return r
}

func (r *rig) open() {
	r.t.Helper()
	o := storage.Options{Dir: storeDir, FS: r.fs, SegmentSize: 1 << 20, Logger: quietLogger(), Clock: r.clock.Now}
	o.Flush.Policy = storage.FlushSync
	o.Retention.MaxAge, o.Retention.DiskRatio = -1, -1
	st, err := storage.Open(o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.st = st
	r.reopenService()
	st.OnDispatch(func(topic string, qid int32, off int64) { r.cur.Load().OnDispatch(topic, qid, off) })
}

// reopenService opens the Service again on the open store.
func (r *rig) reopenService() {
	r.t.Helper()
	svc, err := New(Config{Store: r.st, FS: r.fs, Dir: popDir, BrokerName: broker, Now: r.clock.Now, Logger: quietLogger(),
		MaxReconsume: func(string) int32 { return r.maxRe },
		DLQ:          func(g string) (string, error) { return "%DLQ%" + g, nil }, SyncInterval: r.syncInterval, Backoff: r.backoff,
		Commit: r.commit, Committed: r.committed, ProgressInterval: time.Hour})
	if err != nil {
		r.t.Fatal(err)
	}
	r.svc = svc
	r.cur.Store(svc)
}

// crash loses power (every unsynced byte lost) and opens both again.
func (r *rig) crash() {
	r.t.Helper()
	fs := r.fs.CrashClone(nil)
	_ = r.st.Close()
	r.fs = fs
	r.open()
}

// send stores n messages to queue q with tag tag, waiting until indexed.
func (r *rig) send(q int32, tag string, bodies ...string) {
	r.t.Helper()
	for _, b := range bodies {
		props := record.AppendProperty(nil, "TAGS", tag)
		m := &storage.Message{Topic: topic, QueueID: q, Body: []byte(b), Properties: props,
			TagsCode: record.TagsCodeOf(props), BornTimestamp: r.clock.Now().UnixMilli()}
		res, err := r.st.Append(context.Background(), m)
		if err != nil {
			r.t.Fatal(err)
		}
		for end := time.Now().Add(30 * time.Second); r.st.MaxQueueOffset(topic, q) <= res.QueueOffset; {
			if time.Now().After(end) {
				r.t.Fatal("never indexed")
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func (r *rig) req(max int, inv time.Duration) *Request {
	return &Request{Group: group, Topic: topic, QueueID: -1, Queues: r.queues, MaxMsgs: max, Invisible: inv}
}

// popped is a message as a client sees it.
type popped struct {
	body   string
	times  int32
	handle Handle
}

func (r *rig) pop(q *Request) []popped {
	r.t.Helper()
	res, err := r.svc.Pop(context.Background(), q)
	if err != nil {
		r.t.Fatal(err)
	}
	return decode(r.t, q, &res)
}

func decode(t *testing.T, q *Request, res *Result) []popped {
	var out []popped
	for i, b := range res.Records {
		var rec record.Record
		if err := record.Decode(b, record.PhysOffsetOf(b), &rec); err != nil {
			t.Fatalf("a popped record does not verify: %v", err)
		}
		e := ExtraInfo{CkQueueOffset: res.Offsets[i], PopTime: res.PopTime, InvisibleTime: res.Invisible, Retry: "0",
			BrokerName: broker, QueueID: res.QueueIDs[i], QueueOffset: res.Offsets[i]}
		out = append(out, popped{body: string(rec.Body), times: rec.ReconsumeTimes,
			handle: Handle{Group: q.Group, Topic: q.Topic, QueueID: res.QueueIDs[i], Offset: res.Offsets[i], Extra: e.String()}})
	}
	return out
}

func bodies(ps []popped) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.body)
	}
	return s
}

func msgs(n int) []string {
	var s []string
	for i := range n {
		s = append(s, fmt.Sprintf("m%d", i))
	}
	return s
}
