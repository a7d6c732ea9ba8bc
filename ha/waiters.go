package ha

// waiter is one WaitReplicated call waiting for slaves to acknowledge end.
// Waiters are pooled and own their channel, so a steady-state call
// allocates nothing; no goroutine or timer belongs to a waiter.
//
// Ownership: the caller hands the waiter to the queue under Master.mu;
// exactly one of release, expire or failAll takes it out and hands it the
// result. A blocking waiter (fn nil) gets it on done (which has room for
// it, so that never blocks); the caller then receives it and returns the
// waiter to the pool. A callback waiter (WaitReplicatedFunc) is moved to
// the queue's fired list with its result; the master calls fn after it
// unlocks (Master.unlockAndFire), then pools the waiter.
type waiter struct {
	end      int64 // CommitLog offset the slaves must acknowledge
	deadline int64 // Master.now() past which it times out
	done     chan error
	fn       func(error) // set for a callback waiter
	err      error       // a fired callback waiter's result
}

func newWaiter() *waiter { return &waiter{done: make(chan error, 1)} }

// waitQueue holds waiters in order of end (FIFO among equal ends): one
// acknowledgement releases a prefix. Not safe for concurrent use: the
// master guards it with its mutex. Its slice is reused, so it allocates
// only when it holds more waiters than ever before.
type waitQueue struct {
	q    []*waiter
	head int // q[head:] are waiting
	// fired is the callback waiters released and not yet called, in the
	// order they were released (offset order within one release).
	fired []*waiter
}

// hand gives w its result: on its channel, or onto the fired list.
func (wq *waitQueue) hand(w *waiter, err error) {
	if w.fn != nil {
		w.err = err
		wq.fired = append(wq.fired, w)
		return
	}
	w.done <- err
}

func (wq *waitQueue) len() int { return len(wq.q) - wq.head }

// push inserts w in order. Calls come mostly in offset order, so the
// search runs from the tail and usually stops at once.
func (wq *waitQueue) push(w *waiter) {
	if wq.head > 0 && len(wq.q) == cap(wq.q) {
		n := copy(wq.q, wq.q[wq.head:])
		clear(wq.q[n:])
		wq.q, wq.head = wq.q[:n], 0
	}
	wq.q = append(wq.q, w)
	i := len(wq.q) - 1
	for i > wq.head && wq.q[i-1].end > w.end {
		wq.q[i] = wq.q[i-1]
		i--
	}
	wq.q[i] = w
}

// release hands err to every waiter whose end is at or below upTo and
// returns how many it released.
func (wq *waitQueue) release(upTo int64, err error) int {
	n := 0
	for wq.head < len(wq.q) && wq.q[wq.head].end <= upTo {
		wq.hand(wq.q[wq.head], err)
		wq.q[wq.head] = nil
		wq.head++
		n++
	}
	wq.compact()
	return n
}

// expire hands err to every waiter whose deadline is at or before now and
// returns how many it released; the rest keep their order.
func (wq *waitQueue) expire(now int64, err error) int {
	j := wq.head
	for i := wq.head; i < len(wq.q); i++ {
		w := wq.q[i]
		if w.deadline <= now {
			wq.hand(w, err)
			continue
		}
		wq.q[j] = w
		j++
	}
	n := len(wq.q) - j
	clear(wq.q[j:])
	wq.q = wq.q[:j]
	wq.compact()
	return n
}

// failAll hands err to every waiter.
func (wq *waitQueue) failAll(err error) int {
	n := wq.len()
	for _, w := range wq.q[wq.head:] {
		wq.hand(w, err)
	}
	clear(wq.q)
	wq.q, wq.head = wq.q[:0], 0
	return n
}

func (wq *waitQueue) compact() {
	if wq.head == len(wq.q) {
		wq.q, wq.head = wq.q[:0], 0
	}
}
