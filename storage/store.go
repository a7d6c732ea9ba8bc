package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/vfs"
	"golang.org/x/sys/cpu"
)

// Store is an open message store: one CommitLog, its ConsumeQueues, and
// the goroutines that flush, index, checkpoint and expire them.
type Store struct {
	opts    Options
	fs      vfs.FS
	be      backend.Backend
	log     *slog.Logger
	clock   func() time.Time
	segSize int64
	dir     string
	clDir   string
	policy  FlushPolicy
	maxRec  int  // largest record (or batch) a segment takes
	staged  bool // segments keep their buffer in a stage (stage.go)

	lock io.Closer // Dir/LOCK
	cq   *consumequeue.Table
	kidx *keyIndex // the message key index (keyindex.go); nil when disabled

	// fenced: Append refuses (fence.go); AppendReplicated goes on.
	fenced atomic.Bool
	ho     handOver

	// The offsets below sit on cache lines of their own, by writer: the
	// appender stores written (and handed, when its append puts the bytes
	// in the kernel) on every append while the dispatcher, on another
	// CPU, stores dispatched and dispatchOK every round; sharing a line
	// with each other or with fields read on every append (ho's flags,
	// fenced) made each side's stores miss in the other's cache.
	_ cpu.CacheLinePad
	// written is the CommitLog offset up to which records are appended
	// and readable; durable up to which they are fsynced. Both only grow
	// (but a cut, replica_cut.go, sets every offset here to the cut, under
	// mu, flushMu and the segment list's lock), both are stored by one
	// goroutine at a time (written under mu, durable by the flusher) and
	// loaded by anyone.
	written atomic.Int64
	// handed: every byte below it is in the kernel (handoff.go); stored
	// by the hand-over's writer, the appender (mmap, a stage) or a flush.
	// durable <= handed <= written once a flush moves durable.
	handed  atomic.Int64
	_       cpu.CacheLinePad
	durable atomic.Int64
	// flushStart is when (unix ns) the flush in progress began, 0 when
	// none runs (FlushStalled).
	flushStart atomic.Int64
	_          cpu.CacheLinePad
	// dispatched: every record below it has its ConsumeQueue entry
	// appended or is held for a retry. dispatchOK stops at the first
	// held record (dispatch_retry.go).
	dispatched atomic.Int64
	dispatchOK atomic.Int64
	_          cpu.CacheLinePad
	// carry: written records the dispatcher took but could not index yet
	// (past the visible limit), in log order; the dispatcher's alone.
	carry []dispatchReq
	// hold: records whose ConsumeQueue append failed, retried until it
	// succeeds, and the read-only state of a full disk (dispatch_retry.go,
	// readonly.go).
	hold dispatchHold
	// dirDirty says a segment was created since the commitlog directory
	// was last synced: the flusher syncs it before it reports any byte of
	// the new segment durable.
	dirDirty atomic.Bool
	// broken holds the sticky fatal error (wrapping ErrBroken), once set.
	broken atomic.Pointer[error]

	// segs is the segment list, oldest first. The slice is replaced, never
	// changed in place. Readers that do I/O on a segment hold the lock
	// shared so retention cannot close it under them.
	segs struct {
		sync.RWMutex
		list []*segment
	}

	// mu is the append lock: one short critical section per Append or
	// AppendBatch (assign offsets, seal, copy into the segment).
	mu struct {
		sync.Mutex
		active   *segment // the segment appends go to (nil before the first)
		poisoned bool     // a write into active failed: seal it before the next append
		counters map[queueKey]*int64
		topics   map[string]string // topic names of replicated records, interned
		keys     []uint32          // takeKeysLocked's scratch
		lastTs   int64             // newest store timestamp handed out
		pending  []*waiter         // sync appends waiting for durability, in offset order
		dispatch []dispatchReq     // written records not yet indexed, in offset order
		closed   bool
	}

	waiters   sync.Pool // *waiter
	replBufs  sync.Pool // *replBatch
	bufs      sync.Pool // *encodeBuf
	sem       chan struct{}
	callbacks atomic.Pointer[[]func(topic string, queueID int32, queueOffset int64)]
	onHanded  atomic.Pointer[[]func(handed int64)]

	pendingN atomic.Int64 // len(mu.pending), for the flusher's gatherer
	// loneRun counts the consecutive flush rounds, up to 2, that released
	// one waiter and found none queued behind it: at 2, a lone writer runs
	// its own rounds (lone.go). Stored under flushMu. ownWaiters and
	// ownDispatch are the scratch of an own round (under flushMu,
	// dispatchMu).
	loneRun     atomic.Int32
	ownWaiters  []*waiter
	ownDispatch []dispatchReq
	flushKick   chan struct{}
	// flushWanted asks the flusher for a round with no waiter queued
	// (a replicated append under the sync policy).
	flushWanted  atomic.Bool
	dispatchKick chan struct{}
	closing      chan struct{} // closed when Close starts
	wg           sync.WaitGroup
	stop         struct {
		flusher, dispatcher, background chan struct{}
	}

	retainMu sync.Mutex // one ApplyRetention at a time
	// flushMu is held by whoever flushes (a flush round, the async
	// flusher, recovery, Close) and by TruncateTo and ResetTo, which close
	// segments a flush must not meet. dispatchMu is held by each dispatch
	// round and by those two. Lock order: retainMu, dispatchMu, flushMu,
	// mu, ckpt, segs; then verified.mu, then scrub.mu (verified.go).
	flushMu, dispatchMu sync.Mutex
	// cuts counts TruncateTo and ResetTo calls begun and ended (odd while
	// one runs): a read that saw it change may have mixed the log before
	// and after a cut, and reads again (get.go).
	cuts atomic.Int64

	ckpt struct {
		sync.Mutex
		last checkpoint // the last one written or read
		// seen are the dispatched offsets the periodic checkpoints saw,
		// oldest first, back to ConsumeQueueFlushMaxDelay ago: the
		// oldest gives the lazy flush its Before (checkpoint.go).
		seen []dispatchSample
	}
	m  metrics
	ra readAhead   // readahead.go
	rc *blockCache // blockcache.go; nil: off

	scrub    scrubState    // scrub.go
	verified verifiedState // verified.go, verify_open.go
}

type queueKey struct {
	topic string
	qid   int32
}

// Open opens the store in opts.Dir, creating it if needed. After an
// unclean stop it recovers first: the CommitLog's tail is scanned record by
// record and cut at the first torn record, the ConsumeQueues trimmed and
// re-indexed to match (see recovery.go). It then starts the flusher, the
// dispatcher, the checkpointer and retention, and the check of what was
// written since the verified mark (verify_open.go; Unverified).
func Open(opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	be := opts.segmentBackend()
	s := &Store{
		opts:         opts,
		fs:           opts.FS,
		be:           be,
		log:          opts.Logger,
		clock:        opts.Clock,
		segSize:      opts.SegmentSize,
		dir:          opts.Dir,
		clDir:        filepath.Join(opts.Dir, "commitlog"),
		policy:       opts.Flush.Policy,
		flushKick:    make(chan struct{}, 1),
		dispatchKick: make(chan struct{}, 1),
		closing:      make(chan struct{}),
	}
	s.maxRec = int(min(opts.SegmentSize-blankReserve, 1<<31-1))
	s.ho.cond.L = &s.ho.mu
	s.staged = stageUse(opts, be)
	s.ho.inAppend = appendsReachKernel(opts.backendBaseName()) || s.staged
	s.ho.buffered = opts.Durability() == DurabilityMemory
	s.stop.flusher = make(chan struct{})
	s.stop.dispatcher = make(chan struct{})
	s.stop.background = make(chan struct{})
	s.mu.counters = make(map[queueKey]*int64)
	s.mu.topics = make(map[string]string)
	s.replBufs.New = func() any { return new(replBatch) }
	s.sem = make(chan struct{}, opts.Flush.MaxPending)
	s.waiters.New = func() any { return newWaiter() }
	s.bufs.New = func() any { return new(encodeBuf) }
	s.m.init()
	s.rc = newBlockCache(opts.ReadCacheSize)
	if s.rc != nil && opts.DirectColdReads {
		s.rc.ahead = make(chan blockReq, 4*readAheadBlocks)
	}
	if err := s.open(); err != nil {
		_ = s.closeFiles()
		return nil, err
	}
	s.quarantine() // load the read path's quarantine now, not at the first read
	s.start()
	return s, nil
}

// open makes the directories, takes the lock and recovers.
func (s *Store) open() error {
	dirs := []string{s.dir, s.clDir}
	if s.staged {
		dirs = append(dirs, filepath.Join(s.dir, stageDirName))
	}
	for _, d := range dirs {
		if err := s.fs.MkdirAll(d); err != nil {
			return fmt.Errorf("storage: mkdir %s: %w", d, err)
		}
	}
	for _, d := range []string{filepath.Dir(s.dir), s.dir} {
		if err := s.fs.SyncDir(d); err != nil {
			return fmt.Errorf("storage: sync dir %s: %w", d, err)
		}
	}
	l, err := s.fs.Lock(filepath.Join(s.dir, "LOCK"))
	if errors.Is(err, syscall.ENOSPC) { // a new store's LOCK on a full disk
		return writeError("create "+filepath.Join(s.dir, "LOCK"), err)
	}
	if err != nil {
		return fmt.Errorf("storage: lock %s (is another process using the store?): %w", s.dir, err)
	}
	s.lock = l
	return s.recover()
}

// start launches the long-lived goroutines.
func (s *Store) start() {
	s.wg.Add(3)
	go s.runFlusher()
	go s.runDispatcher()
	go s.runBackground()
	s.startVerifyOnOpen()
	if s.rc != nil && s.rc.ahead != nil {
		s.wg.Add(1)
		go s.runBlockReadAhead()
	}
}

// Close stops appends, flushes everything, writes a clean checkpoint and
// removes the abort marker. After a fatal error it only releases the files
// (the next Open recovers) and returns that error. On a full disk it
// releases the files, leaves the abort marker and returns
// ErrDiskFullAtClose (readonly.go). Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	close(s.closing)
	var errs []error
	clean := true
	if err := s.sealPoisoned(); err != nil {
		// The tail may hold bytes of a refused append: leave the abort
		// marker so the next Open scans and cuts them off.
		errs = append(errs, err)
		clean = false
	}
	kick(s.dispatchKick) // the dispatcher moves past the blank

	// Order: the flusher last flushes and releases every waiter; the
	// dispatcher indexes what is written; then the background jobs stop.
	close(s.stop.flusher)
	close(s.stop.dispatcher)
	close(s.stop.background)
	s.wg.Wait()

	if err := s.finalFlush(); err != nil {
		errs = append(errs, err)
	}
	// The dispatcher may have stopped before the last flush made the
	// last records visible: index them now (every goroutine is gone).
	var spare []dispatchReq
	s.dispatchRound(&spare)
	if err := s.finishHeld(); err != nil { // records still waiting for their index entry
		errs = append(errs, err)
		clean = false
	}
	if err := s.Err(); err == nil && clean {
		if err := s.writeCheckpoint(true); err != nil {
			errs = append(errs, err)
		} else if err := s.removeAbortMarker(); err != nil {
			errs = append(errs, err)
		}
	} else if err != nil {
		errs = append(errs, err)
	}
	s.retainMu.Lock() // an ApplyRetention call may still be walking a segment
	defer s.retainMu.Unlock()
	if err := s.closeFiles(); err != nil {
		errs = append(errs, err)
	}
	return s.closeError(errs)
}

// sealPoisoned seals the active segment if a refused append may have left
// bytes past its tail (appends would otherwise overwrite them in place
// after a clean restart, and a later crash could find a stale record).
func (s *Store) sealPoisoned() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.poisoned || s.mu.active == nil || s.mu.active.sealed.Load() {
		return nil
	}
	return s.sealLocked(s.mu.active)
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// closeFiles closes the segments, the ConsumeQueues and the lock.
func (s *Store) closeFiles() error {
	var errs []error
	s.segs.Lock()
	for _, g := range s.segs.list {
		if err := g.seg.Close(); err != nil {
			errs = append(errs, fmt.Errorf("storage: close %s: %w", g.path, err))
		}
	}
	s.segs.list = nil
	s.segs.Unlock()
	if s.cq != nil {
		if err := s.cq.Close(); err != nil { // later reads get consumequeue.ErrClosed
			errs = append(errs, err)
		}
	}
	if err := s.closeKeyIndex(); err != nil {
		errs = append(errs, err)
	}
	if s.lock != nil {
		if err := s.lock.Close(); err != nil {
			errs = append(errs, err)
		}
		s.lock = nil
	}
	return errors.Join(errs...)
}

// Err returns the sticky fatal error (wrapping ErrBroken), or nil.
func (s *Store) Err() error {
	if p := s.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// breakWith makes err the sticky fatal error unless one is set, and
// returns the sticky one.
func (s *Store) breakWith(err error) error {
	be := brokenError(err)
	if s.broken.CompareAndSwap(nil, &be) {
		s.log.Error("storage: store broken; nothing more is acknowledged", "err", err)
	}
	return s.Err()
}

// Options returns the options the store runs with (defaults filled in).
func (s *Store) Options() Options { return s.opts }

// WrittenOffset is the CommitLog offset up to which records are visible.
func (s *Store) WrittenOffset() int64 { return s.written.Load() }

// DispatchedOffset is the CommitLog offset below which every record is in
// its consume queue (none held for a retry): what a read by queue offset
// sees.
func (s *Store) DispatchedOffset() int64 { return s.dispatchOK.Load() }

// AwaitIndexed waits, at most timeout, until the dispatcher has taken
// every record written before the call (indexed it, or held it for a
// retry), so that queue offsets read next (MaxQueueOffset, OffsetByTime)
// count them; it reports whether it got there. For the requests that
// decide where a consumer starts: the dispatcher runs behind the appends,
// and a queue not yet indexed reads as empty.
func (s *Store) AwaitIndexed(timeout time.Duration) bool {
	w := s.written.Load()
	if s.dispatched.Load() >= w {
		return true
	}
	kick(s.dispatchKick)
	deadline := time.Now().Add(timeout)
	for pause := 50 * time.Microsecond; s.dispatched.Load() < w; pause = min(2*pause, 5*time.Millisecond) {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(pause)
	}
	return true
}

// DurableOffset is the CommitLog offset up to which records are fsynced.
// It may run ahead of HandedOffset only at the memory level, where a flush
// writes out and syncs in one step.
func (s *Store) DurableOffset() int64 { return s.durable.Load() }

// CommitLogMinOffset is the first CommitLog offset still stored.
func (s *Store) CommitLogMinOffset() int64 {
	s.segs.RLock()
	defer s.segs.RUnlock()
	if len(s.segs.list) == 0 {
		return s.written.Load()
	}
	return s.segs.list[0].base
}

// OnDispatch registers fn, run by the dispatcher after each record is
// indexed in its ConsumeQueue (long-poll wakes on it). Register before
// traffic; fn must not block.
func (s *Store) OnDispatch(fn func(topic string, queueID int32, queueOffset int64)) {
	addCallback(&s.callbacks, fn)
}

// addCallback appends fn to the list p points at (replaced, never changed
// in place, so callers run it without a lock).
func addCallback[F any](p *atomic.Pointer[[]F], fn F) {
	for {
		old := p.Load()
		var next []F
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, fn)
		if p.CompareAndSwap(old, &next) {
			return
		}
	}
}

// PrepareQueues creates the ConsumeQueue files of topic's queues 0 to
// n-1 that have none yet (consumequeue.Queue.Prepare): a broker calls it
// when a topic is created, so the dispatcher does not make a directory and
// a file at each new queue's first record.
func (s *Store) PrepareQueues(topic string, n int) error {
	if err := s.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return ErrClosed
	}
	var errs []error
	for i := range n {
		if err := s.cq.Queue(topic, int32(i)).Prepare(); err != nil {
			errs = append(errs, err)
			if len(errs) == 3 {
				break // a full disk or a bad name fails them all alike
			}
		}
	}
	return errors.Join(errs...)
}
