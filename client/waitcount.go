package client

import "sync"

// waitCount counts work in flight and tells when it drops to zero. Unlike
// a sync.WaitGroup, add may race with a waiter (a send starting while
// Flush waits): the waiter then waits for that one too, or returns just
// before it started.
type waitCount struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (w *waitCount) add() {
	w.mu.Lock()
	if w.n == 0 {
		w.zero = make(chan struct{})
	}
	w.n++
	w.mu.Unlock()
}

func (w *waitCount) done() {
	w.mu.Lock()
	w.n--
	if w.n == 0 {
		close(w.zero)
		w.zero = nil
	}
	w.mu.Unlock()
}

// idle returns a channel closed once nothing is in flight.
func (w *waitCount) idle() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return closedChan
	}
	return w.zero
}
