package remoting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// bigBody is the body size from which a frame's body is queued by
// reference (written with writev) rather than copied into the write buffer.
const bigBody = 32 << 10

// conn is one connection: a reader and a writer goroutine, the pending
// calls by opaque, and the write queue.
type conn struct {
	cl    *Client
	addr  string
	nc    net.Conn
	entry *connEntry

	failOnce sync.Once
	done     chan struct{} // closed when the connection failed
	err      error         // why; set before done closes

	wake chan struct{} // cap 1: the write queue is not empty
	uses atomic.Int64  // requests queued, for the idle close (sweepLoop)

	w struct {
		sync.Mutex
		buf   []byte    // encoded frames
		segs  []segment // what to write, in order; buf[mark:] follows them
		mark  int
		size  int           // bytes queued, buf and referenced bodies
		space chan struct{} // closed (and replaced) when the writer drains the queue
	}

	p struct {
		sync.Mutex
		calls map[int32]*call
		timed int // calls in the map with a deadline
	}
}

// segment is a run of the write buffer [lo, hi) or, with ext set, a body
// queued by reference.
type segment struct {
	lo, hi int
	ext    []byte
}

func newConn(cl *Client, addr string, nc net.Conn, e *connEntry) *conn {
	c := &conn{cl: cl, addr: addr, nc: nc, entry: e, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.w.space = make(chan struct{})
	c.p.calls = map[int32]*call{}
	return c
}

func (c *conn) dead() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// fail ends the connection once: every pending call gets err.
func (c *conn) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		close(c.done)
		_ = c.nc.Close() // failing already: err is the reason
		c.cl.remove(c.addr, c.entry)
		c.p.Lock()
		calls := c.p.calls
		c.p.calls = nil
		c.p.Unlock()
		for _, cl := range calls {
			cl.finish(nil, err)
		}
		c.cl.opts.Logger.Debug("remoting: connection closed", "addr", c.addr, "err", err, "pending", len(calls))
	})
}

func (c *conn) register(opaque int32, cl *call) error {
	c.p.Lock()
	defer c.p.Unlock()
	if c.p.calls == nil {
		return c.err
	}
	c.p.calls[opaque] = cl
	if !cl.deadline.IsZero() {
		c.p.timed++
	}
	return nil
}

// unregister removes the call and reports whether it was there (whoever
// removes a call finishes it).
func (c *conn) unregister(opaque int32) bool {
	c.p.Lock()
	defer c.p.Unlock()
	cl, ok := c.p.calls[opaque]
	if !ok {
		return false
	}
	delete(c.p.calls, opaque)
	if !cl.deadline.IsZero() {
		c.p.timed--
	}
	return true
}

func (c *conn) take(opaque int32) *call {
	c.p.Lock()
	defer c.p.Unlock()
	cl := c.p.calls[opaque]
	if cl != nil {
		delete(c.p.calls, opaque)
		if !cl.deadline.IsZero() {
			c.p.timed--
		}
	}
	return cl
}

// enqueue encodes cmd onto the write queue and wakes the writer. It waits
// (within ctx, or with a nil ctx until deadline) while the queue is over
// MaxPending. copyBody forces the body to be copied (one-way requests
// return before the write).
func (c *conn) enqueue(ctx context.Context, deadline time.Time, cmd *protocol.Command, copyBody bool) error {
	need := len(cmd.Body) + 256
	for {
		c.w.Lock()
		if c.dead() {
			c.w.Unlock()
			return c.err
		}
		if c.w.size == 0 || c.w.size+need <= c.cl.opts.MaxPending {
			break
		}
		space := c.w.space
		c.w.Unlock()
		if ctx == nil { // made only when there is a wait
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(context.Background(), deadline)
			defer cancel()
		}
		select {
		case <-space:
		case <-c.done:
		case <-ctx.Done():
			return ctxError(ctx, "queue to "+c.addr)
		}
	}
	// Locked from here.
	c.uses.Add(1)
	start := len(c.w.buf)
	buf, err := protocol.AppendFrameHead(c.w.buf, cmd, len(cmd.Body))
	if err != nil {
		c.w.Unlock()
		return fmt.Errorf("remoting: encode %v: %w", cmd.Code, err)
	}
	if len(cmd.Body) < bigBody || copyBody {
		buf = append(buf, cmd.Body...)
		c.w.buf = buf
	} else {
		c.w.buf = buf
		c.w.segs = append(c.w.segs, segment{lo: c.w.mark, hi: len(buf)}, segment{ext: cmd.Body})
		c.w.mark = len(buf)
	}
	c.w.size += len(c.w.buf) - start
	if len(cmd.Body) >= bigBody && !copyBody {
		c.w.size += len(cmd.Body)
	}
	c.w.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// writeLoop is the connection's writer goroutine: woken by enqueue, it
// takes everything queued and writes it with one (vectored) write. It owns
// the socket's write side and ends when the connection fails.
func (c *conn) writeLoop() {
	defer c.cl.wg.Done()
	var spare []byte
	var spareSegs []segment
	var bufs net.Buffers
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.w.Lock()
		buf, segs, mark := c.w.buf, c.w.segs, c.w.mark
		c.w.buf, c.w.segs, c.w.mark, c.w.size = spare[:0], spareSegs[:0], 0, 0
		space := c.w.space
		c.w.space = make(chan struct{})
		c.w.Unlock()
		close(space)
		if mark < len(buf) {
			segs = append(segs, segment{lo: mark, hi: len(buf)})
		}
		bufs = bufs[:0]
		for _, s := range segs {
			if s.ext != nil {
				bufs = append(bufs, s.ext)
			} else if s.hi > s.lo {
				bufs = append(bufs, buf[s.lo:s.hi])
			}
		}
		if len(bufs) > 0 {
			// A failure to set it shows as the write's error.
			_ = c.nc.SetWriteDeadline(time.Now().Add(c.cl.opts.WriteTimeout))
			wb := bufs // WriteTo consumes its receiver
			if _, err := wb.WriteTo(c.nc); err != nil {
				c.fail(fmt.Errorf("%w: write to %s: %v", ErrConnection, c.addr, err))
				return
			}
		}
		// buf and segs come back as the next spares: the senders now
		// fill the ones installed above.
		for i := range segs {
			segs[i].ext = nil // drop body references
		}
		for i := range bufs {
			bufs[i] = nil
		}
		if cap(buf) <= 4<<20 {
			spare = buf
		} else {
			spare = nil // let an outsized buffer go
		}
		spareSegs = segs
	}
}

// wholeFrame is the largest answer the reader allocates whole, at its
// announced length, before its bytes arrive: the client trusts the broker
// it dialled that far.
const wholeFrame = 4 << 20

// readLoop is the connection's reader goroutine: it owns the socket's read
// side, hands responses to their calls and requests to OnRequest, and
// fails the connection on the first read or decode error.
func (c *conn) readLoop() {
	defer c.cl.wg.Done()
	br := bufio.NewReaderSize(c.nc, 64<<10)
	// Frames that fit buf are read into it; what a decoded command keeps
	// of one (its body) is copied out, so an answer without a body costs
	// no allocation for its frame.
	buf := make([]byte, 0, 4<<10)
	for {
		frame, err := protocol.ReadFrameWhole(br, c.cl.opts.MaxFrame, buf, wholeFrame)
		if err != nil {
			if !c.dead() {
				c.fail(fmt.Errorf("%w: read from %s: %v", ErrConnection, c.addr, err))
			}
			return
		}
		// An answer's call is looked up before the frame is decoded, so
		// the answer to a single send decodes without a map.
		var cl *call
		decode := protocol.DecodeFrame
		if op, flag, ok := protocol.FrameOpaque(frame); ok && flag&protocol.FlagResponse != 0 {
			if cl = c.take(op); cl == nil {
				continue // timed out, or not ours: nothing waits for it
			}
			if cl.code == protocol.SendMessageV2 || cl.code == protocol.SendMessage {
				decode = protocol.DecodeSendResponseFrame
			}
		}
		cmd, err := decode(frame)
		if err != nil {
			err = fmt.Errorf("%w: from %s: %v", ErrConnection, c.addr, err)
			if cl != nil {
				cl.finish(nil, err)
			}
			c.fail(err)
			return
		}
		if cmd.Body != nil && cap(buf) >= len(frame) {
			cmd.Body = append([]byte(nil), cmd.Body...)
		}
		if cmd.IsResponse() {
			if cl == nil {
				cl = c.take(cmd.Opaque)
			}
			if cl != nil {
				cl.finish(cmd, nil)
			}
			continue
		}
		c.cl.wg.Add(1)
		go c.serve(cmd)
	}
}

// serve answers one request of the peer.
func (c *conn) serve(req *protocol.Command) {
	defer c.cl.wg.Done()
	var resp *protocol.Command
	if h := c.cl.opts.OnRequest; h != nil {
		resp = h(c.addr, req)
	}
	if req.IsOneway() {
		return
	}
	if resp == nil {
		resp = protocol.NewResponse(req, protocol.RequestCodeNotSupported, fmt.Sprintf("request code %d not supported", req.Code))
	}
	resp.Opaque = req.Opaque
	resp.Flag |= protocol.FlagResponse
	resp.Serialize = req.Serialize
	ctx, cancel := context.WithTimeout(context.Background(), c.cl.opts.Timeout)
	defer cancel()
	if err := c.enqueue(ctx, time.Time{}, resp, true); err != nil && !errors.Is(err, ErrConnection) {
		c.cl.opts.Logger.Debug("remoting: answer not sent", "addr", c.addr, "err", err)
	}
}

// sweepLoop is the connection's timeout goroutine: every SweepInterval
// it fails the calls made with a deadline (InvokeAsyncDeadline) that
// passed it. It ends when the connection fails.
func (c *conn) sweepLoop() {
	defer c.cl.wg.Done()
	t := time.NewTicker(c.cl.opts.SweepInterval)
	defer t.Stop()
	var late []*call
	seen, since := c.uses.Load(), time.Now()
	for {
		select {
		case <-t.C:
		case <-c.done:
			return
		}
		now := time.Now()
		if u := c.uses.Load(); u != seen {
			seen, since = u, now
		} else if idle := c.cl.opts.IdleClose; idle > 0 && now.Sub(since) >= idle && c.idle() {
			c.fail(fmt.Errorf("%w: %s closed by the client after %v idle", ErrConnection, c.addr, idle))
			return
		}
		late = late[:0]
		c.p.Lock()
		if c.p.timed > 0 {
			for op, cl := range c.p.calls {
				if !cl.deadline.IsZero() && now.After(cl.deadline) {
					delete(c.p.calls, op)
					c.p.timed--
					late = append(late, cl)
				}
			}
		}
		c.p.Unlock()
		for _, cl := range late {
			cl.finish(nil, &timeoutError{fmt.Sprintf("%s code %d", cl.addr, cl.code)})
		}
		clear(late)
	}
}

// idle reports whether no call is pending on c.
func (c *conn) idle() bool {
	c.p.Lock()
	defer c.p.Unlock()
	return len(c.p.calls) == 0
}

// call is one pending request; finish runs done exactly once.
type call struct {
	done func(*protocol.Command, error)
	// deadline, for a call of InvokeAsyncDeadline, is when the sweeper
	// fails it; addr and code name it in the error.
	deadline time.Time
	addr     string
	code     int32

	mu       sync.Mutex
	finished bool
	stop     func() bool
	cancel   context.CancelFunc
}

func (c *call) setStop(stop func() bool, cancel context.CancelFunc) {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		stop()
		if cancel != nil {
			cancel()
		}
		return
	}
	c.stop, c.cancel = stop, cancel
	c.mu.Unlock()
}

func (c *call) finish(resp *protocol.Command, err error) {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return
	}
	c.finished = true
	stop, cancel := c.stop, c.cancel
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	if cancel != nil {
		cancel()
	}
	c.done(resp, err)
}
