package consumequeue

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/samsamq/samsa/storage/vfs"
)

// Table is the set of consume queues under one directory.
type Table struct {
	opts Options
	sh   *shared

	// topicDirs are the topic directories OpenTable found (only Clear
	// removes them), for MarkUnsynced. Set before the table is shared,
	// then changed under mu by Clear.
	topicDirs []string

	mu struct {
		sync.RWMutex
		queues map[queueKey]*Queue
		closed bool
		// dirsDirty says the next Flush syncs topicDirs and the root
		// (MarkUnsynced); err is a failed sync of one of them, returned by
		// every later Flush.
		dirsDirty bool
		err       error
	}
}

type queueKey struct {
	topic string
	qid   int32
}

// OpenTable opens (creating Dir if needed) and recovers every queue found
// under Dir/<topic>/<queueId>/. Directories whose name is not a queue id are
// skipped with a warning.
func OpenTable(opts Options) (*Table, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t := &Table{opts: opts, sh: &shared{
		fs:      opts.FS,
		root:    opts.Dir,
		perFile: int64(opts.EntriesPerFile),
		log:     opts.Logger,
		h:       &handles{fs: opts.FS, max: opts.MaxOpenFiles},
	}}
	t.sh.scratch.New = func() any { return new(scratchBuf) }
	t.mu.queues = make(map[queueKey]*Queue)
	fs := opts.FS
	if err := fs.MkdirAll(opts.Dir); err != nil {
		return nil, fmt.Errorf("consumequeue: mkdir %s: %w", opts.Dir, err)
	}
	if err := fs.SyncDir(filepath.Dir(opts.Dir)); err != nil {
		return nil, fmt.Errorf("consumequeue: sync dir %s: %w", filepath.Dir(opts.Dir), err)
	}
	topics, err := fs.List(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: list %s: %w", opts.Dir, err)
	}
	for _, topic := range topics {
		if err := checkName(topic, 0); err != nil {
			opts.Logger.Warn("consumequeue: skipping entry", "dir", opts.Dir, "name", topic)
			continue
		}
		qids, err := fs.List(filepath.Join(opts.Dir, topic))
		if err != nil {
			opts.Logger.Warn("consumequeue: skipping entry that is not a directory", "dir", opts.Dir, "name", topic, "err", err)
			continue
		}
		t.topicDirs = append(t.topicDirs, filepath.Join(opts.Dir, topic))
		for _, name := range qids {
			qid, err := strconv.ParseInt(name, 10, 32)
			if err != nil || qid < 0 || strconv.FormatInt(qid, 10) != name {
				opts.Logger.Warn("consumequeue: skipping entry", "dir", filepath.Join(opts.Dir, topic), "name", name)
				continue
			}
			q, err := openQueue(t.sh, topic, int32(qid))
			if err != nil {
				_ = t.Close()
				return nil, err
			}
			t.mu.queues[queueKey{topic, int32(qid)}] = q
		}
	}
	return t, nil
}

// OpenFiles returns how many queue files have a descriptor open now (at
// most Options.MaxOpenFiles, but for files in use at this moment).
func (t *Table) OpenFiles() int { return t.sh.h.Open() }

// Options returns the options the table runs with (defaults filled in).
func (t *Table) Options() Options { return t.opts }

// Queue returns the queue of (topic, queueID), creating it (in memory; its
// files come with the first Append) if it does not exist. A topic or id that
// cannot name a directory gives a queue whose Append returns ErrInvalidName.
func (t *Table) Queue(topic string, queueID int32) *Queue {
	k := queueKey{topic, queueID}
	t.mu.RLock()
	q := t.mu.queues[k]
	t.mu.RUnlock()
	if q != nil {
		return q
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if q = t.mu.queues[k]; q == nil {
		q = newQueue(t.sh, topic, queueID)
		if t.mu.closed {
			q.mu.closed = true
		}
		t.mu.queues[k] = q
	}
	return q
}

// queues returns the table's queues sorted by topic, then id.
func (t *Table) queues() []*Queue {
	t.mu.RLock()
	qs := make([]*Queue, 0, len(t.mu.queues))
	for _, q := range t.mu.queues {
		qs = append(qs, q)
	}
	t.mu.RUnlock()
	slices.SortFunc(qs, func(a, b *Queue) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.qid, b.qid))
	})
	return qs
}

// Each calls fn for every queue, sorted by topic then queue id, without
// holding the table's lock (fn may call Queue).
func (t *Table) Each(fn func(topic string, qid int32, q *Queue)) {
	for _, q := range t.queues() {
		fn(q.topic, q.qid, q)
	}
}

// Flush flushes every queue and returns every error (errors.Join). After
// MarkUnsynced it also syncs the topic directories and the root, once; a
// failure to sync one sticks (every later Flush returns it).
func (t *Table) Flush() error {
	var errs []error
	for _, q := range t.queues() {
		if err := q.Flush(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	if err := t.syncDirs(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// MarkUnsynced marks every queue unsynced (Queue.MarkUnsynced) and makes
// the next Flush sync the topic directories OpenTable found and the root
// too: a process that died between making a queue's directory and syncing
// its parents left names only the page cache holds, and recovery, which
// adopts them, calls it before it reports anything in them durable.
func (t *Table) MarkUnsynced() {
	for _, q := range t.queues() {
		q.MarkUnsynced()
	}
	t.mu.Lock()
	t.mu.dirsDirty = true
	t.mu.Unlock()
}

// syncDirs syncs the directories that gained a topic's or a queue's
// directory since the last Flush, and the topic directories and the root
// if MarkUnsynced asked.
func (t *Table) syncDirs() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.err != nil {
		return t.mu.err
	}
	dirs := t.sh.takeDirtyDirs()
	for i, d := range dirs {
		if err := t.sh.h.syncDir(d); err != nil {
			err = fmt.Errorf("consumequeue: sync dir %s: %w", d, err)
			if vfs.IsResourceError(err) {
				for _, d := range dirs[i:] {
					t.sh.dirtyDir(d) // not synced: the next Flush tries again
				}
				return err
			}
			t.mu.err = err
			return t.mu.err
		}
	}
	if !t.mu.dirsDirty {
		return nil
	}
	for _, d := range append(t.topicDirs, t.opts.Dir) {
		if err := t.sh.h.syncDir(d); err != nil {
			err = fmt.Errorf("consumequeue: sync dir %s: %w", d, err)
			if vfs.IsResourceError(err) {
				return err // not opened, nothing synced: the next Flush tries again
			}
			t.mu.err = err
			return t.mu.err
		}
	}
	t.mu.dirsDirty = false
	return nil
}

// Clear closes every queue and forgets it, leaving the table open and
// empty: Queue makes new, empty queues from then on, and readers of a
// cleared queue get ErrClosed. The files stay: removing them is the
// caller's (a store that resets its log removes the table's directory
// contents). Nothing may append meanwhile.
func (t *Table) Clear() error {
	t.mu.Lock()
	old := t.mu.queues
	t.mu.queues = make(map[queueKey]*Queue)
	t.topicDirs = nil
	t.mu.Unlock()
	var errs []error
	for _, q := range old {
		if err := q.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close flushes and closes every queue. Later calls on the table's queues
// return ErrClosed; Close again returns nil.
func (t *Table) Close() error {
	t.mu.Lock()
	t.mu.closed = true
	t.mu.Unlock()
	var errs []error
	for _, q := range t.queues() {
		if err := q.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FlushPolicy says which queues FlushSome syncs. A queue that FlushSome
// leaves unsynced holds back the checkpoint's dispatched offset (recovery
// re-indexes from there), so every queue must be flushed within a bounded
// time: Before is that bound, Share smooths the work over it.
type FlushPolicy struct {
	// MinPending: a queue holding at least this many entries not known
	// durable is flushed (RocketMQ's flushConsumeQueueLeastPages: 2
	// pages, about 400 entries).
	MinPending int64
	// Before: a queue whose first unsynced entry lies below this
	// CommitLog offset is flushed, however few entries it holds.
	Before int64
	// Share: of the queues the two rules above leave, at least this
	// fraction (rounded up), oldest first entry first, are flushed too,
	// so that a steady trickle over many queues is synced a little every
	// time rather than all at once when Before passes them.
	Share float64
}

// FlushSome flushes the queues p selects, and those MarkUnsynced marked,
// and syncs the directories Flush would. It returns the lowest PhysOffset
// of an entry it left unsynced (math.MaxInt64 if it left none): every
// entry appended before the call with a lower PhysOffset is durable when
// it returns nil. Errors are returned as Flush's are.
func (t *Table) FlushSome(p FlushPolicy) (floor int64, err error) {
	type cand struct {
		q    *Queue
		phys int64
	}
	var errs []error
	var skipped []cand
	flush := func(q *Queue) {
		if err := q.Flush(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, q := range t.queues() {
		n, phys, all := q.pending()
		switch {
		case all || n >= p.MinPending || (n > 0 && phys < p.Before):
			flush(q)
		case n > 0:
			skipped = append(skipped, cand{q, phys})
		default:
			flush(q) // nothing pending, but a file may be dirty (a full buffer written, then cut)
		}
	}
	if k := int(math.Ceil(p.Share * float64(len(skipped)))); k > 0 {
		slices.SortFunc(skipped, func(a, b cand) int { return cmp.Compare(a.phys, b.phys) })
		for _, c := range skipped[:min(k, len(skipped))] {
			flush(c.q)
		}
		skipped = skipped[min(k, len(skipped)):]
	}
	floor = math.MaxInt64
	for _, c := range skipped {
		// Read again: the queue may have been flushed meanwhile (by a
		// Close) or appended to (at offsets past the caller's bound).
		switch n, phys, all := c.q.pending(); {
		case all:
			floor = 0 // marked since it was chosen: nothing in it is known synced
		case n > 0:
			floor = min(floor, phys)
		}
	}
	if err := t.syncDirs(); err != nil {
		errs = append(errs, err)
	}
	return floor, errors.Join(errs...)
}
