package broker

import (
	"container/heap"
	"time"
)

// heldPull is one suspended pull: it waits for a message at or after
// offset in queue key, or for its deadline.
type heldPull struct {
	key      QueueKey
	offset   int64
	deadline time.Time
	// timerOnly pulls wait for their deadline only, whatever arrives
	// (RocketMQ's short polling, longPollingEnable=false).
	timerOnly bool
	// req is the caller's (the request and its connection); the holder
	// never looks at it.
	req any

	idx int // position in the deadline heap; -1 when not held
}

// holder is the long-poll state machine (RocketMQ's PullRequestHoldService
// without its thread): held pulls by queue, and a deadline heap. It does
// no I/O, starts no goroutines, reads no clock, and is not safe for
// concurrent use; longPoll drives it under a mutex.
type holder struct {
	byQueue map[QueueKey][]*heldPull
	byTime  deadlineHeap
}

func newHolder() *holder { return &holder{byQueue: make(map[QueueKey][]*heldPull)} }

// hold adds p. It reports whether p's deadline is now the earliest (the
// driver then re-arms its timer).
func (h *holder) hold(p *heldPull) (earliest bool) {
	if !p.timerOnly {
		h.byQueue[p.key] = append(h.byQueue[p.key], p)
	}
	heap.Push(&h.byTime, p)
	return p.idx == 0
}

// arrived is called when queue key's next offset to assign became
// maxOffset (a record at maxOffset-1 was indexed). It removes and returns
// the pulls that asked for an offset below maxOffset: they can now be
// answered.
func (h *holder) arrived(key QueueKey, maxOffset int64) []*heldPull {
	list := h.byQueue[key]
	if len(list) == 0 {
		return nil
	}
	var ready []*heldPull
	keep := list[:0]
	for _, p := range list {
		if p.offset < maxOffset {
			heap.Remove(&h.byTime, p.idx)
			ready = append(ready, p)
		} else {
			keep = append(keep, p)
		}
	}
	for i := len(keep); i < len(list); i++ {
		list[i] = nil
	}
	if len(keep) == 0 {
		delete(h.byQueue, key)
	} else {
		h.byQueue[key] = keep
	}
	return ready
}

// expired removes and returns the pulls whose deadline is at or before now.
func (h *holder) expired(now time.Time) []*heldPull {
	var out []*heldPull
	for len(h.byTime) > 0 && !h.byTime[0].deadline.After(now) {
		p := heap.Pop(&h.byTime).(*heldPull)
		h.unlinkQueue(p)
		out = append(out, p)
	}
	return out
}

// remove takes p out if it is still held; it reports whether it was.
func (h *holder) remove(p *heldPull) bool {
	if p.idx < 0 {
		return false
	}
	heap.Remove(&h.byTime, p.idx)
	h.unlinkQueue(p)
	return true
}

func (h *holder) unlinkQueue(p *heldPull) {
	if p.timerOnly {
		return
	}
	list := h.byQueue[p.key]
	for i, q := range list {
		if q == p {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(h.byQueue, p.key)
	} else {
		h.byQueue[p.key] = list
	}
}

// next returns the earliest deadline.
func (h *holder) next() (time.Time, bool) {
	if len(h.byTime) == 0 {
		return time.Time{}, false
	}
	return h.byTime[0].deadline, true
}

// len returns how many pulls are held.
func (h *holder) len() int { return len(h.byTime) }

// drain removes and returns every held pull (shutdown).
func (h *holder) drain() []*heldPull {
	out := make([]*heldPull, 0, len(h.byTime))
	for len(h.byTime) > 0 {
		out = append(out, heap.Pop(&h.byTime).(*heldPull))
	}
	clear(h.byQueue)
	return out
}

// deadlineHeap orders held pulls by deadline (container/heap).
type deadlineHeap []*heldPull

func (d deadlineHeap) Len() int           { return len(d) }
func (d deadlineHeap) Less(i, j int) bool { return d[i].deadline.Before(d[j].deadline) }
func (d deadlineHeap) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].idx, d[j].idx = i, j
}
func (d *deadlineHeap) Push(x any) {
	p := x.(*heldPull)
	p.idx = len(*d)
	*d = append(*d, p)
}
func (d *deadlineHeap) Pop() any {
	old := *d
	p := old[len(old)-1]
	old[len(old)-1] = nil
	p.idx = -1
	*d = old[:len(old)-1]
	return p
}
