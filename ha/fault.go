package ha

import (
	"context"
	"sync"
)

// Fault injects faults into a Slave (SlaveConfig.Fault), for tests of the
// link. A nil *Fault injects nothing. Safe for concurrent use.
type Fault struct {
	mu      sync.Mutex
	resume  chan struct{} // non-nil while stalled; closed by Resume
	corrupt int
}

// Stall makes the slave stop reading frames and acknowledging (a hung
// slave): the master's waiters time out and its sender fills the socket.
// A frame already read is held, not applied.
func (f *Fault) Stall() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resume == nil {
		f.resume = make(chan struct{})
	}
}

// Resume ends a Stall.
func (f *Fault) Resume() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resume != nil {
		close(f.resume)
		f.resume = nil
	}
}

// CorruptNext flips a byte in each of the next n data frames before the
// slave appends them (a bad CRC on the wire).
func (f *Fault) CorruptNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.corrupt += n
}

// stalled reports whether a Stall is on.
func (f *Fault) stalled() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resume != nil
}

// wait blocks while a Stall is on, or until ctx ends.
func (f *Fault) wait(ctx context.Context) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	ch := f.resume
	f.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mangle flips a byte of data if a corruption is pending.
func (f *Fault) mangle(data []byte) {
	if f == nil || len(data) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.corrupt > 0 {
		f.corrupt--
		data[len(data)/2] ^= 0x5a
	}
}
