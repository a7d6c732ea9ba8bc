package broker

import (
	"time"

	"github.com/samsamq/samsa/protocol"
)

// workerIdle is how long a connection's idle worker waits for another
// request before it exits.
const workerIdle = 2 * time.Second

// dispatch runs cmd's handler on one of the connection's idle workers,
// or on a new one when none is idle. Workers are goroutines that outlive
// their request: a goroutine a request would cost a start and, deep in
// the store, several stack growths (each a copy of the stack); a worker
// grows its stack once. As many run as requests are processed at once
// (bounded by MaxConcurrentRequests through Broker.acquire).
func (c *conn) dispatch(cmd *protocol.Command) {
	select {
	case c.work <- cmd:
	default:
		go c.worker(cmd)
	}
}

// worker is a request-processing goroutine of the connection: it handles
// cmd, then every request handed to it by dispatch, and exits after
// workerIdle without one or when the connection closes.
func (c *conn) worker(cmd *protocol.Command) {
	c.handle(cmd)
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		select {
		case cmd := <-c.work:
			c.handle(cmd)
			t.Reset(workerIdle)
		case <-t.C:
			return
		case <-c.closed:
			return
		}
	}
}
