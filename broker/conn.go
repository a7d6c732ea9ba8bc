package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// outFrame is one frame queued for the writer: cmd's header and either
// cmd.Body or, when parts is set, the concatenation of parts (a pull's
// records, written with writev without copying them together).
type outFrame struct {
	cmd   *protocol.Command
	parts [][]byte
	// buf, when set, is the pooled buffer parts lie in: the writer
	// releases it once the frame is written.
	buf storage.ReadBuffer
	// files, when it has pieces, is the body (parts nil): runs of segment
	// files the writer sends with sendfile (conn_sendfile.go) and closes.
	files storage.FileRecords
}

// hasParts says the body is written from parts or files, not cmd.Body.
func (f *outFrame) hasParts() bool { return f.parts != nil || f.files.Pieces != nil }

func (f outFrame) bodyLen() int {
	if f.files.Pieces != nil {
		return f.files.Len()
	}
	if f.parts == nil {
		return len(f.cmd.Body)
	}
	n := 0
	for _, p := range f.parts {
		n += len(p)
	}
	return n
}

// writeQueue is how many frames may wait for a connection's writer; a
// handler answering a full queue blocks (backpressure on the client).
const writeQueue = 1024

// conn is one client connection: a reader goroutine (serve) that decodes
// frames and hands each request to its own goroutine, and a writer
// goroutine (writeLoop) that owns every write to the socket.
type conn struct {
	b      *Broker
	nc     net.Conn
	br     *bufio.Reader
	addr   string
	born   netip.AddrPort // the client's address, stamped as each record's born host
	out    chan outFrame
	closed chan struct{}          // closed by close: everything stops
	wdone  chan struct{}          // closed when the writer has exited
	work   chan *protocol.Command // unbuffered: hands a request to an idle worker
	once   sync.Once
	// reqs counts this connection's requests not yet answered, held
	// long-poll pulls included, so a graceful close can answer them all
	// before the writer stops.
	reqs sync.WaitGroup
	// busy counts requests whose handler is still running (a held pull
	// no longer counts): while some are, the writer yields before a write
	// so that their answers join it.
	busy   atomic.Int32
	opaque atomic.Int32 // ids of requests the broker sends the client
	// pending mirrors reqs' count: while it is above zero (a held pull)
	// the connection is not idle.
	pending atomic.Int32
	// dl is the reader under br: idle and partial-frame timeouts
	// (conn_net.go).
	dl *netx.Deadlines
	// fileConn is the socket sendfile writes to; nil for TLS (and any
	// connection without a descriptor): pulls are sent from memory.
	fileConn syscall.Conn
	// checksCRC: the client said (heartbeat or pull, ext field
	// crcChecked) that it checks every record's CRC itself.
	checksCRC atomic.Bool
}

func newConn(b *Broker, nc net.Conn) *conn {
	c := &conn{b: b, nc: nc,
		addr: nc.RemoteAddr().String(), born: ipv4AddrPort(nc.RemoteAddr()), out: make(chan outFrame, writeQueue),
		closed: make(chan struct{}), wdone: make(chan struct{}), work: make(chan *protocol.Command)}
	c.fileConn = netx.FileConn(nc)
	c.dl = c.newDeadlines()
	c.br = bufio.NewReaderSize(c.dl, 64<<10)
	return c
}

// reqAdd and reqDone count requests in c.reqs and c.pending.
func (c *conn) reqAdd(n int) {
	c.pending.Add(int32(n))
	c.reqs.Add(n)
}

func (c *conn) reqDone() {
	c.pending.Add(-1)
	c.reqs.Done()
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// serve runs the connection until it closes. It is the reader goroutine.
// When the broker is shutting down (its read deadline passed) it finishes
// the requests in flight and flushes their answers before closing.
func (c *conn) serve() {
	first, err := c.br.Peek(1)
	if err != nil {
		c.timedOut(err)
		c.close("")
		return
	}
	if isTextStart(first[0]) {
		if !c.b.cfg.TextProtocolEnable {
			c.b.log.Info("broker: text command on a remoting port with textProtocolEnable=false; closing", "remote", c.addr)
			c.close("")
			return
		}
		c.serveText()
		c.close("")
		return
	}
	go c.writeLoop()
	var sends []*protocol.Command // gathered inline sends (conn_inline.go)
	flush := func() {
		if len(sends) > 0 {
			c.handleSends(sends)
			clear(sends)
			sends = sends[:0]
		}
	}
	for {
		cmd, aliased, err := c.readRequest()
		if err != nil {
			flush()
			if c.b.closing.Load() {
				c.drain()
				return
			}
			c.readFailed(err)
			c.close("")
			return
		}
		c.dl.Boundary(c.br.Buffered())
		c.b.stats.requests.Add(1)
		if cmd.IsResponse() {
			// The broker's requests to clients are one-way; a stray
			// response has no one waiting for it.
			if !c.nextFrameBuffered() {
				flush()
			}
			continue
		}
		if c.inlineSend(cmd) {
			sends = append(sends, cmd)
			if len(sends) < maxInlineSends && c.nextFrameBuffered() {
				continue
			}
			flush()
			continue
		}
		flush()
		ownBody(cmd, aliased)
		if !c.b.acquire(c.closed) {
			c.close("")
			return
		}
		c.reqAdd(1)
		c.busy.Add(1)
		c.dispatch(cmd)
	}
}

func (c *conn) readFailed(err error) {
	switch {
	case c.timedOut(err):
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case errors.Is(err, protocol.ErrFrameTooLarge), errors.Is(err, protocol.ErrBadHeaderLength),
		errors.Is(err, protocol.ErrBadHeader), errors.Is(err, io.ErrUnexpectedEOF):
		c.b.stats.badFrames.Add(1)
		c.b.log.Warn("broker: closing connection on a bad frame", "remote", c.addr, "err", err)
	default:
		var ne net.Error
		if !errors.As(err, &ne) && !errors.Is(err, os.ErrDeadlineExceeded) {
			c.b.log.Info("broker: connection read failed", "remote", c.addr, "err", err)
		}
	}
}

// drain finishes a connection gracefully: wait for the requests in flight
// (the broker has answered its held pulls first), let the writer flush
// what they queued, then close.
func (c *conn) drain() {
	c.reqs.Wait()
	select {
	case c.out <- outFrame{}: // the writer's signal to flush and exit
		select {
		case <-c.wdone:
		case <-time.After(5 * time.Second):
		}
	case <-c.closed:
	}
	c.close("")
}

// held is what a handler returns when it kept the request to answer
// later (a long-poll pull): handle then leaves the request counted in
// c.reqs, and whoever answers it calls c.reqs.Done.
var held = &protocol.Command{}

// handle processes one request on its own goroutine.
func (c *conn) handle(cmd *protocol.Command) {
	var resp *protocol.Command
	start := time.Now()
	func() {
		defer c.b.release()
		defer func() {
			if r := recover(); r != nil {
				c.b.log.Error("broker: handler panicked", "code", cmd.Code, "remote", c.addr, "panic", r, "stack", string(debug.Stack()))
				resp = protocol.NewResponse(cmd, protocol.SystemError, fmt.Sprintf("internal error processing request code %d", cmd.Code))
			}
		}()
		resp = c.b.dispatch(c, cmd)
	}()
	c.b.metrics.req.done(cmd.Code, resp, start)
	if resp == held {
		c.busy.Add(-1)
		return
	}
	if resp != nil && !cmd.IsOneway() {
		c.send(outFrame{cmd: resp})
	}
	c.busy.Add(-1)
	c.reqDone()
}

// send queues a frame for the writer; it blocks while the queue is full
// and gives up when the connection closes.
func (c *conn) send(f outFrame) bool {
	select {
	case c.out <- f:
		return true
	case <-c.closed:
		f.files.Close()
		return false
	}
}

// trySend queues a frame unless the queue is full.
func (c *conn) trySend(f outFrame) bool {
	select {
	case c.out <- f:
		return true
	default:
		return false
	}
}

// Writer batching: a write takes at most maxWriteFrames frames; while
// requests of the connection are still being processed, the writer yields
// the handler up to maxWriteYields times before writing, as long as each
// yield brought more answers, so that the answers to a burst of pipelined
// requests leave in one writev instead of one each.
const (
	maxWriteFrames = 256
	maxWriteYields = 1
	// inlineBody is the largest body copied into the header buffer; larger
	// ones are written from where they are.
	inlineBody = 4096
)

// writeLoop is the writer goroutine: it owns writes to the socket, takes
// every frame queued, encodes the headers into one buffer and writes the
// lot with one writev. It is woken by a queued frame and ends when the
// connection closes (or, after a drain, on the nil frame).
func (c *conn) writeLoop() {
	defer close(c.wdone)
	defer c.dropQueued()
	var (
		scratch []byte
		batch   []outFrame
		spans   [][2]int
		bufs    net.Buffers
		cuts    []fileCut
	)
	for {
		var f outFrame
		select {
		case f = <-c.out:
		case <-c.closed:
			return
		}
		batch = append(batch[:0], f)
		last := f.cmd == nil
		drain := func() int {
			n := 0
			for len(batch) < maxWriteFrames && !last {
				select {
				case f := <-c.out:
					batch = append(batch, f)
					last = f.cmd == nil
					n++
				default:
					return n
				}
			}
			return n
		}
		drain()
		for y := 0; y < maxWriteYields && !last && len(batch) < maxWriteFrames && c.busy.Load() > 0; y++ {
			runtime.Gosched()
			if drain() == 0 {
				break
			}
		}
		if last {
			batch = batch[:len(batch)-1]
		}
		scratch, spans = scratch[:0], spans[:0]
		for _, f := range batch {
			start := len(scratch)
			var err error
			scratch, err = protocol.AppendFrameHead(scratch, f.cmd, f.bodyLen())
			if err != nil {
				c.b.log.Error("broker: cannot encode a response; closing", "remote", c.addr, "err", err)
				c.close("encode failed")
				return
			}
			if !f.hasParts() && len(f.cmd.Body) <= inlineBody {
				scratch = append(scratch, f.cmd.Body...)
			}
			spans = append(spans, [2]int{start, len(scratch)})
		}
		bufs, cuts = bufs[:0], cuts[:0]
		for i, f := range batch {
			// Adjacent header runs are one buffer: fewer iovecs.
			run := scratch[spans[i][0]:spans[i][1]]
			if n := len(bufs); n > 0 && i > 0 && !batch[i-1].hasParts() && len(batch[i-1].cmd.Body) <= inlineBody {
				prev := bufs[n-1]
				bufs[n-1] = scratch[spans[i][0]-len(prev) : spans[i][1]]
			} else {
				bufs = append(bufs, run)
			}
			switch {
			case f.files.Pieces != nil:
				cuts = append(cuts, fileCut{at: len(bufs), frame: i}) // sent from the files after bufs[:at]
			case f.parts != nil:
				bufs = append(bufs, f.parts...)
			case len(f.cmd.Body) > inlineBody:
				bufs = append(bufs, f.cmd.Body)
			}
		}
		if len(bufs) > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			err := c.writeBatch(bufs, cuts, batch)
			for i := range batch {
				batch[i].buf.Release() // written (or never to be): nothing reads it now
				batch[i].files.Close()
			}
			if err != nil {
				c.close("write failed: " + err.Error())
				return
			}
		}
		if last {
			return
		}
		if cap(scratch) > 1<<20 {
			scratch = nil
		}
		clear(bufs[:cap(bufs)])
		clear(batch)
	}
}

// dropQueued closes the files of frames left in the queue when the
// writer ends (a frame queued later is left to the collector, which
// closes its files too).
func (c *conn) dropQueued() {
	for {
		select {
		case f := <-c.out:
			f.files.Close()
		default:
			return
		}
	}
}

// close shuts the connection once: the socket, the writer, and its place in
// the client manager. reason, when set, is logged.
func (c *conn) close(reason string) {
	c.once.Do(func() {
		if reason != "" {
			c.b.log.Info("broker: closing connection", "remote", c.addr, "reason", reason)
		}
		close(c.closed)
		_ = c.nc.Close() // closing for a reason logged above, or at the peer's end
		c.b.connClosed(c)
	})
}

// notifyConsumerIdsChanged implements peer.
func (c *conn) notifyConsumerIdsChanged(group string) {
	req := protocol.NewRequest(protocol.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": group}, nil)
	req.MarkOneway()
	req.Opaque = c.opaque.Add(1)
	c.trySend(outFrame{cmd: req})
}

// remote implements peer.
func (c *conn) remote() string { return c.addr }
