package pop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

// Store is what the service reads messages from and writes dead letters
// to (storage.Store has it).
type Store interface {
	// GetMessages reads up to maxMsgs records of a queue from offset,
	// skipping those whose tag hash tagFilter refuses (nil: none).
	GetMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, tagFilter func(int64) bool) (storage.GetResult, error)
	// MinQueueOffset is a queue's first readable offset.
	MinQueueOffset(topic string, queueID int32) int64
	// MaxQueueOffset is one past a queue's last offset.
	MaxQueueOffset(topic string, queueID int32) int64
	// Append stores a message (a dead letter).
	Append(ctx context.Context, m *storage.Message) (storage.AppendResult, error)
}

// Config is what a Service needs.
type Config struct {
	// Store reads messages and takes dead letters.
	Store Store
	// FS and Dir: where pop.wal lives (Dir is created).
	FS  vfs.FS
	Dir string
	// BrokerName goes into every receipt handle; a handle naming another
	// broker is refused.
	BrokerName string
	// Now is the clock of pop times and invisible times. Default time.Now.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
	// MaxReconsume is how many times a group's message may be handed out
	// again before it goes to the DLQ (RocketMQ's retryMaxTimes). Default 16.
	MaxReconsume func(group string) int32
	// Backoff is how much longer than its invisible time a message not
	// acknowledged waits before it is handed out for the times-th time
	// again (or goes to the DLQ), as RocketMQ's retry ladder spaces a
	// failing message's attempts. Nil: none, every message comes back
	// when its invisible time ends.
	Backoff func(times int32) time.Duration
	// DLQ makes sure a group's dead-letter topic exists and names it.
	DLQ func(group string) (string, error)
	// MaxHeld bounds the pops waiting at once (default 10,000); past it a
	// pop with nothing to take answers at once.
	MaxHeld int
	// CompactBytes: past this size pop.wal is rewritten as a snapshot of
	// what is in flight. Default 16 MiB.
	CompactBytes int64
	// SyncInterval: 0 (default) fsyncs pop.wal before a pop or an ack is
	// answered (group commit); above 0, what a request changed is written
	// (it survives the process being killed) before the answer and
	// fsynced every SyncInterval in the background, as RocketMQ's async
	// flush treats its checkpoints. A power loss then costs at most the
	// changes of the last interval, and any lost change only hands a
	// message out again (every prefix of the file is an earlier state of
	// the same consumption): never a message lost.
	SyncInterval time.Duration
	// Committed and Commit keep each queue's progress where a new master
	// finds it (progress.go): Committed is the group's committed consumer
	// offset; Commit records one, every ProgressInterval (default
	// DefaultProgressInterval) while it moves. Nil: none kept.
	Committed        func(group, topic string, qid int32) (int64, bool)
	Commit           func(group, topic string, qid int32, offset int64) error
	ProgressInterval time.Duration
}

// Request is one POP_MESSAGE.
type Request struct {
	Group, Topic string
	// QueueID is the queue to pop from, or -1 for any of Queues.
	QueueID int32
	Queues  int32
	MaxMsgs int
	// Invisible is how long what is handed out stays invisible.
	Invisible time.Duration
	// Poll is how long to wait when there is nothing (0: answer at once).
	Poll time.Duration
	// InitMode is where a queue the group never popped starts: 0 its
	// first message (ConsumeInitMode.MIN), 1 its end (MAX).
	InitMode int32
	// TagMatch filters by tag hash (nil: everything); Match by the
	// record's properties (SQL92; nil: everything).
	TagMatch func(int64) bool
	Match    func(props []byte) bool
	// Order is an ordered pop (RocketMQ 5's order=true): a queue is held
	// by the pop that took messages from it until they are all
	// acknowledged or their invisible time passes; then what is left of
	// them comes back, in queue order, before anything newer.
	Order bool
}

// Result is what one pop handed out.
type Result struct {
	PopTime   int64 // ms, the handles' identity
	Invisible int64 // ms
	// Records are whole stored records (a redelivered one re-encoded with
	// its reconsume times raised), QueueIDs and Offsets theirs.
	Records  [][]byte
	QueueIDs []int32
	Offsets  []int64
	// RestNum is how many messages are left behind the cursors read.
	RestNum int64
	// StartOffsetInfo and MsgOffsetInfo are RocketMQ's header strings a
	// client builds each message's handle from (ExtraInfo).
	StartOffsetInfo, MsgOffsetInfo string
	// OrderCountInfo (ordered pops) says how often each message was
	// handed out before, as RocketMQ's header does.
	OrderCountInfo string
	// Times is each record's reconsume times.
	Times []int32
}

// Limits of one request.
const (
	MaxMsgsPerPop   = 32      // RocketMQ's POP refuses maxMsgNums above 32
	maxBytesPerPop  = 4 << 20 // what one answer carries at most
	MaxInvisible    = 12 * time.Hour
	MinInvisible    = time.Second / 10
	MaxPoll         = 30 * time.Second
	defaultMaxTimes = 16
)

// Errors the broker maps to response codes.
var (
	ErrBadRequest  = errors.New("pop: bad request")
	ErrStale       = errors.New("pop: stale receipt handle")
	ErrPollingFull = errors.New("pop: too many pops waiting")
	ErrClosed      = errors.New("pop: service closed")
)

// queue is a group's state on one queue.
type queue struct {
	next     int64 // the next offset never handed out; -1 before the first pop
	inflight map[int64]*entry
	// committed is the floor last committed (progress.go); -1: none.
	committed int64
	// since the service started
	redelivered, deadLetters int64
}

// entry is a message handed out and not yet acknowledged.
type entry struct {
	popTime, deadline int64 // ms
	attempts          int32 // times handed out again
	// changed: the deadline was set by ChangeInvisible, which the
	// back-off does not stretch (not logged: after a restart it does)
	changed bool
}

// visibleAt is when e may be handed out again (ms): its deadline, and the
// back-off of the attempt that would be next.
func (s *Service) visibleAt(e *entry) int64 {
	if s.cfg.Backoff == nil || e.changed {
		return e.deadline
	}
	return e.deadline + s.cfg.Backoff(e.attempts+1).Milliseconds()
}

type qkey struct {
	group, topic string
	qid          int32
}

type gtKey struct{ group, topic string }

// GroupStats is a group's line of Stats.
type GroupStats struct {
	Group       string
	InFlight    int64
	Redelivered int64
	DeadLetters int64
}

// Service is the POP state machine with its write-ahead file. The state
// is under mu; the file is written under wr and synced outside both
// (commit.go).
type Service struct {
	cfg  Config
	held atomic.Int64
	mu   struct {
		sync.Mutex
		queues map[qkey]*queue
		stats  map[string]*GroupStats
		err    error // sticky: a failed write or fsync
		rr     uint32
		closed bool
		// buf holds the records logged and not yet taken by a write;
		// seq numbers the changes they make (commit.go), spare is a
		// buffer to swap in
		buf, spare []byte
		seq        uint64
	}
	// used holds every (group, topic) with state, read lock-free by every
	// pull (Uses).
	used   sync.Map
	wr     writer
	commit committer
	syncs  atomic.Int64 // fsyncs of pop.wal, for tests and benchmarks
	// stop ends the flusher (SyncInterval), which closes stopped.
	stop, stopped chan struct{}
	// prog ends the progress goroutine (Config.Commit), which closes done.
	prog struct {
		stop, done chan struct{}
	}
	wmu     sync.Mutex
	waiters map[*waiter]struct{}
}

type waiter struct {
	topic, group string
	qid          int32 // -1: any queue
	ch           chan struct{}
}

// New opens the service: replays pop.wal and rewrites it as a snapshot.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.FS == nil || cfg.Dir == "" || cfg.DLQ == nil {
		return nil, errors.New("pop: Config needs Store, FS, Dir and DLQ")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxReconsume == nil {
		cfg.MaxReconsume = func(string) int32 { return defaultMaxTimes }
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 10000
	}
	if cfg.CompactBytes <= 0 {
		cfg.CompactBytes = 16 << 20
	}
	s := &Service{cfg: cfg, waiters: map[*waiter]struct{}{}}
	s.commit.cond = sync.NewCond(&s.commit.mu)
	s.stop, s.stopped = make(chan struct{}), make(chan struct{})
	s.mu.queues = map[qkey]*queue{}
	s.mu.stats = map[string]*GroupStats{}
	s.wr.wal = wal{fs: cfg.FS, dir: cfg.Dir}
	if err := cfg.FS.MkdirAll(cfg.Dir); err != nil {
		return nil, fmt.Errorf("pop: %w", err)
	}
	if err := readWAL(cfg.FS, cfg.Dir, s.replay); err != nil {
		return nil, fmt.Errorf("pop: replay %s: %w", walName, err)
	}
	s.wr.Lock()
	s.mu.Lock()
	s.floorsCommittedLocked() // commit only what moves from here (progress.go)
	err := s.compactLocked()
	s.mu.Unlock()
	s.wr.Unlock()
	if err != nil {
		return nil, err
	}
	if cfg.SyncInterval > 0 {
		go s.flusher()
	} else {
		close(s.stopped)
	}
	s.prog.stop, s.prog.done = make(chan struct{}), make(chan struct{})
	if cfg.Commit != nil {
		if cfg.ProgressInterval <= 0 {
			s.cfg.ProgressInterval = DefaultProgressInterval
		}
		go s.progress()
	} else {
		close(s.prog.done)
	}
	return s, nil
}

// replay applies one logged change.
func (s *Service) replay(r *walRec) {
	q := s.queueLocked(r.group, r.topic, r.qid)
	switch r.kind {
	case kindCursor:
		q.next = max(q.next, r.offset)
	case kindPopped:
		e, ok := q.inflight[r.offset]
		if !ok {
			e = &entry{}
			q.inflight[r.offset] = e
			s.statLocked(r.group).InFlight++
		}
		e.popTime, e.deadline, e.attempts = r.popTime, r.deadline, r.attempts
		q.next = max(q.next, r.offset+1)
	case kindRemoved:
		if _, ok := q.inflight[r.offset]; ok {
			delete(q.inflight, r.offset)
			s.statLocked(r.group).InFlight--
		}
	}
}

func (s *Service) queueLocked(group, topic string, qid int32) *queue {
	k := qkey{group, topic, qid}
	q := s.mu.queues[k]
	if q == nil {
		q = &queue{next: -1, inflight: map[int64]*entry{}, committed: -1}
		s.mu.queues[k] = q
		s.used.LoadOrStore(gtKey{group, topic}, struct{}{})
	}
	return q
}

func (s *Service) statLocked(group string) *GroupStats {
	st := s.mu.stats[group]
	if st == nil {
		st = &GroupStats{Group: group}
		s.mu.stats[group] = st
	}
	return st
}

// compactLocked rewrites pop.wal as the state it holds (the writer's lock
// held too).
func (s *Service) compactLocked() error {
	var b []byte
	for k, q := range s.mu.queues {
		if q.next >= 0 {
			b = appendRec(b, &walRec{kind: kindCursor, group: k.group, topic: k.topic, qid: k.qid, offset: q.next})
		}
		for off, e := range q.inflight {
			b = appendRec(b, &walRec{kind: kindPopped, group: k.group, topic: k.topic, qid: k.qid, offset: off,
				popTime: e.popTime, deadline: e.deadline, attempts: e.attempts})
		}
	}
	if err := s.wr.wal.rewrite(b); err != nil {
		s.mu.err = err
		return err
	}
	s.wr.gen++
	return nil
}

// logLocked appends a change to the pending records.
func (s *Service) logLocked(kind byte, k qkey, offset int64, e *entry) {
	r := walRec{kind: kind, group: k.group, topic: k.topic, qid: k.qid, offset: offset}
	if e != nil {
		r.popTime, r.deadline, r.attempts = e.popTime, e.deadline, e.attempts
	}
	s.mu.buf = appendRec(s.mu.buf, &r)
}

// Uses reports whether group consumes topic by POP (it has state there):
// the broker then refuses the group's pulls on it.
func (s *Service) Uses(group, topic string) bool {
	_, ok := s.used.Load(gtKey{group, topic})
	return ok
}

// QueueStat is a group's POP state on one queue.
type QueueStat struct {
	// Next is the next offset never handed out (-1: never popped);
	// Floor the lowest offset not acknowledged (the least in flight, else
	// Next): everything below it was consumed.
	Next, Floor int64
	InFlight    int64
	// Redelivered and DeadLetters count since the broker started.
	Redelivered, DeadLetters int64
}

// QueueStats is group's POP state on each queue of topic it popped (nil:
// it never popped topic).
func (s *Service) QueueStats(group, topic string) map[int32]QueueStat {
	if !s.Uses(group, topic) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int32]QueueStat{}
	for k, q := range s.mu.queues {
		if k.group != group || k.topic != topic {
			continue
		}
		st := QueueStat{Next: q.next, Floor: q.next, InFlight: int64(len(q.inflight)), Redelivered: q.redelivered,
			DeadLetters: q.deadLetters}
		for off := range q.inflight {
			st.Floor = min(st.Floor, off)
		}
		out[k.qid] = st
	}
	return out
}

// Topics lists the topics group popped.
func (s *Service) Topics(group string) []string {
	var out []string
	s.used.Range(func(k, _ any) bool {
		if gt := k.(gtKey); gt.group == group {
			out = append(out, gt.topic)
		}
		return true
	})
	slices.Sort(out)
	return out
}

// Stats lists every group's in-flight count, redeliveries and dead
// letters.
func (s *Service) Stats() []GroupStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GroupStats, 0, len(s.mu.stats))
	for _, st := range s.mu.stats {
		out = append(out, *st)
	}
	return out
}

// Close closes pop.wal; waiting pops answer with what they have.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.wakeAll()
	seq := s.mu.seq
	s.mu.Unlock()
	if s.cfg.Commit != nil {
		close(s.prog.stop) // a last commit of the floors
		<-s.prog.done
	}
	if s.cfg.SyncInterval > 0 {
		close(s.stop)
		<-s.stopped
	}
	err := s.write(seq)
	if err == nil {
		err = s.durable(seq) // what the flusher had not synced yet
	}
	s.wr.Lock()
	defer s.wr.Unlock()
	return errors.Join(err, s.wr.wal.close())
}
