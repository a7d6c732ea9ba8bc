package client

import "sync"

// tracker follows one queue's messages between the pull and the end of
// their handling, for the push consumer's two guarantees:
//
//   - at-least-once: the offset to commit is the lowest offset not yet
//     handled (or, with nothing in flight, the offset after the last pull),
//     so a crash redelivers every unhandled message and nothing else past
//     the last commit;
//   - flow control: pulling pauses while the queue holds more than its
//     bound of in-flight messages, bytes or offset span.
//
// Messages arrive in offset order (one puller per queue) and finish in any
// order. Entries form a FIFO; a finished entry is marked and popped once
// every entry before it is finished, so each operation is O(1) amortised.
// Safe for concurrent use: the puller adds, handler goroutines finish.
type tracker struct {
	limits flowLimits

	mu struct {
		sync.Mutex
		entries []trackEntry // entries[head:] are live, in offset order
		head    int
		base    uint64 // sequence number of entries[0]
		msgs    int    // unfinished entries
		bytes   int64  // their bytes
		next    int64  // offset after the last added (the pull's next offset)
		last    int64  // offset of the last added message
	}
	// resume gets a token when the queue drops back under its bounds.
	resume chan struct{}
}

type trackEntry struct {
	offset int64
	size   int64
	done   bool
}

// flowLimits bound a queue's in-flight work; 0 means no bound.
type flowLimits struct {
	msgs  int
	bytes int64
	span  int64
}

func newTracker(next int64, l flowLimits) *tracker {
	t := &tracker{limits: l, resume: make(chan struct{}, 1)}
	t.mu.next = next
	t.mu.last = next - 1
	return t
}

// add records pulled messages (offsets ascending, with their sizes) and
// the offset to pull next; it returns the sequence number of the first,
// the others following in order.
func (t *tracker) add(offsets []int64, sizes []int64, next int64) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	seq := t.mu.base + uint64(len(t.mu.entries))
	for i, off := range offsets {
		t.mu.entries = append(t.mu.entries, trackEntry{offset: off, size: sizes[i]})
		t.mu.bytes += sizes[i]
		t.mu.last = off
	}
	t.mu.msgs += len(offsets)
	t.mu.next = next
	return seq
}

// advance moves the next offset without messages (an empty or filtered pull).
func (t *tracker) advance(next int64) {
	t.mu.Lock()
	t.mu.next = next
	t.mu.Unlock()
}

// done marks the message with sequence number seq handled.
func (t *tracker) done(seq uint64) {
	t.mu.Lock()
	i := int(seq - t.mu.base)
	if i < t.mu.head || i >= len(t.mu.entries) || t.mu.entries[i].done {
		t.mu.Unlock()
		return // a reset dropped it, or a double finish
	}
	wasOver := t.overLocked()
	e := &t.mu.entries[i]
	e.done = true
	t.mu.msgs--
	t.mu.bytes -= e.size
	for t.mu.head < len(t.mu.entries) && t.mu.entries[t.mu.head].done {
		t.mu.head++
	}
	t.compactLocked()
	wake := wasOver && !t.overLocked()
	t.mu.Unlock()
	if wake {
		select {
		case t.resume <- struct{}{}:
		default:
		}
	}
}

func (t *tracker) compactLocked() {
	if t.mu.head == len(t.mu.entries) {
		t.mu.base += uint64(len(t.mu.entries))
		t.mu.entries = t.mu.entries[:0]
		t.mu.head = 0
		return
	}
	if t.mu.head > 64 && t.mu.head*2 > len(t.mu.entries) {
		n := copy(t.mu.entries, t.mu.entries[t.mu.head:])
		t.mu.entries = t.mu.entries[:n]
		t.mu.base += uint64(t.mu.head)
		t.mu.head = 0
	}
}

// commitOffset returns the offset safe to commit: the lowest unhandled
// message's, or the next offset to pull when none is in flight.
func (t *tracker) commitOffset() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.head < len(t.mu.entries) {
		return t.mu.entries[t.mu.head].offset
	}
	return t.mu.next
}

// nextOffset returns the offset to pull next.
func (t *tracker) nextOffset() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.next
}

// over reports whether pulling must pause.
func (t *tracker) over() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overLocked()
}

func (t *tracker) overLocked() bool {
	l := t.limits
	if l.msgs > 0 && t.mu.msgs >= l.msgs {
		return true
	}
	if l.bytes > 0 && t.mu.bytes >= l.bytes {
		return true
	}
	if l.span > 0 && t.mu.head < len(t.mu.entries) && t.mu.last-t.mu.entries[t.mu.head].offset >= l.span {
		return true
	}
	return false
}

// inFlight returns the unfinished messages and their bytes.
func (t *tracker) inFlight() (int, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.msgs, t.mu.bytes
}

// reset forgets every in-flight message and restarts at next (the broker
// moved the offset); later done calls for them are ignored.
func (t *tracker) reset(next int64) {
	t.mu.Lock()
	t.mu.base += uint64(len(t.mu.entries))
	t.mu.entries = t.mu.entries[:0]
	t.mu.head = 0
	t.mu.msgs, t.mu.bytes = 0, 0
	t.mu.next, t.mu.last = next, next-1
	t.mu.Unlock()
	select {
	case t.resume <- struct{}{}:
	default:
	}
}
