package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/protocol/metaq"
)

// maxTextInFlight bounds a text connection's put, get and offset requests
// being answered at once; the reader stops reading while that many are.
// With the answer bounds (a value of at most maxMessageSize, a get of at
// most textLimits' maxSize) it bounds what one connection holds.
const maxTextInFlight = 64

// textAnswer is one answer for the text writer: head, then body (a get's
// message set).
type textAnswer struct{ head, body []byte }

// textConn is one text connection. Its reader (serveText) parses requests
// and runs each put, get and offset on a goroutine of its own; every
// answer goes through out to the writer goroutine (writeLoop), which owns
// the socket's writes and flushes when no answer waits.
type textConn struct {
	c        *conn
	lim      metaq.Limits
	out      chan textAnswer
	inflight chan struct{} // a slot per request being answered
	wg       sync.WaitGroup
	authed   bool // with ACL on: an admin account sent auth
	// txs are the connection's open transactions by key (text_txn.go);
	// only the reader touches the map.
	txs map[string]*textTx
}

// serveText runs a text connection until quit, EOF, a timeout or a line
// it cannot read past; then it waits for the answers in flight and
// flushes them before the connection closes.
func (c *conn) serveText() {
	t := &textConn{c: c, lim: c.b.textLimits(), out: make(chan textAnswer, 2*maxTextInFlight),
		inflight: make(chan struct{}, maxTextInFlight), txs: make(map[string]*textTx)}
	done := make(chan struct{})
	go t.writeLoop(done)
	t.readLoop()
	t.wg.Wait()
	t.rollbackOpen()
	close(t.out)
	<-done
}

// answer queues an answer for the writer.
func (t *textConn) answer(head, body []byte) { t.out <- textAnswer{head, body} }

func (t *textConn) answerf(format string, args ...any) {
	t.answer(fmt.Appendf(nil, format, args...), nil)
}

// readLoop reads requests until the connection ends or must end.
func (t *textConn) readLoop() {
	c := t.c
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull || len(line) > maxTextLine {
				t.answerf("CLIENT_ERROR line too long\r\n")
			} else {
				c.timedOut(err)
			}
			return
		}
		if len(line) > maxTextLine {
			t.answerf("CLIENT_ERROR line too long\r\n")
			return
		}
		cmd, perr := metaq.Parse(line, t.lim)
		if errors.Is(perr, metaq.ErrEmpty) {
			c.dl.Boundary(c.br.Buffered())
			continue
		}
		c.b.stats.requests.Add(1)
		if c.b.acl != nil && !t.authed && cmd.Kind != metaq.Quit && cmd.Kind != metaq.Version {
			if t.authed = t.auth(line); !t.authed {
				return
			}
			if cmd.Kind == metaq.Auth {
				c.dl.Boundary(c.br.Buffered())
				continue
			}
		}
		if perr != nil {
			if !t.refuse(perr) {
				return
			}
			c.dl.Boundary(c.br.Buffered())
			continue
		}
		if !t.serve(&cmd) {
			return
		}
		c.dl.Boundary(c.br.Buffered()) // a request is a frame: idle and partial-request timeouts
	}
}

// refuse answers a line the parser refused; false when the stream cannot
// be read past it (a put whose value length is unknown).
func (t *textConn) refuse(err error) bool {
	var e *metaq.Error
	if !errors.As(err, &e) {
		t.answerf("CLIENT_ERROR %s\r\n", err)
		return true
	}
	if e.Kind == metaq.Put {
		if e.ValueLen < 0 {
			t.answerf("CLIENT_ERROR %s; the value's length is unknown, closing\r\n", e.Msg)
			return false
		}
		if _, err := io.CopyN(io.Discard, t.c.br, int64(e.ValueLen)); err != nil {
			return false
		}
	}
	if e.HasOpaque {
		t.answer(metaq.AppendResult(nil, metaq.BadRequest, e.Msg, e.Opaque), nil)
	} else {
		t.answerf("CLIENT_ERROR %s\r\n", e.Msg)
	}
	return true
}

// serve answers one parsed request; false to end the connection.
func (t *textConn) serve(cmd *metaq.Command) bool {
	b := t.c.b
	switch cmd.Kind {
	case metaq.Quit:
		return false
	case metaq.Auth:
		// ACL off (or already authenticated): nothing to check, so a
		// client with credentials works against any broker.
		t.answerf("OK\r\n")
	case metaq.Version:
		if cmd.HasOpaque {
			t.answer(metaq.AppendResult(nil, metaq.Success, b.cfg.Version, cmd.Opaque), nil)
		} else {
			t.answerf("VERSION %s\r\n", b.cfg.Version)
		}
	case metaq.Stats:
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		ok := b.writeStats(w, cmd.Item)
		_ = w.Flush() // into a bytes.Buffer: cannot fail
		switch {
		case cmd.HasOpaque && ok:
			t.answer(metaq.AppendResult(nil, metaq.Success, buf.String(), cmd.Opaque), nil)
		case cmd.HasOpaque:
			t.answer(metaq.AppendResult(nil, metaq.BadRequest, fmt.Sprintf("unknown stats item %q", cmd.Item), cmd.Opaque), nil)
		case ok:
			t.answer(buf.Bytes(), nil)
		default:
			t.answerf("CLIENT_ERROR unknown stats item %q\r\n", cmd.Item)
		}
	case metaq.Transaction:
		return t.transaction(cmd)
	case metaq.Put:
		value, err := t.readValue(cmd.ValueLen)
		if err != nil {
			t.c.timedOut(err)
			return false
		}
		if cmd.TxKey != "" {
			return t.putInTx(cmd, value)
		}
		// Submitted here, in the order read: stored in that order.
		p, refused := b.metaq.Submit(nil, cmd, value, t.c.bornHost())
		if refused != nil {
			t.answer(refused, nil)
			return true
		}
		if !t.run(cmd, func() ([]byte, []byte) { return b.metaq.Wait(nil, p), nil }) {
			go b.metaq.Wait(nil, p) // the puts queued behind it wait for it
			return false
		}
		return true
	case metaq.Get:
		return t.run(cmd, func() ([]byte, []byte) { return b.metaq.Get(nil, cmd) })
	case metaq.Offset:
		return t.run(cmd, func() ([]byte, []byte) { return b.metaq.Offset(nil, cmd), nil })
	default:
		t.answerf("ERROR\r\n")
	}
	return true
}

// readValue reads a put's n value bytes, growing its buffer with what
// arrives: a client that announces a large value and sends little makes
// the broker hold little.
func (t *textConn) readValue(n int) ([]byte, error) {
	const chunk = 64 << 10
	buf := make([]byte, 0, min(n, chunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(n-len(buf), cap(buf)))...)[:len(buf)]
		}
		m, err := t.c.br.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < n {
			return nil, err
		}
	}
	return buf, nil
}

// run answers cmd on a goroutine of its own, once a slot is free (at most
// maxTextInFlight per connection, and the broker's own request bound);
// false when the connection closed while it waited.
func (t *textConn) run(cmd *metaq.Command, fn func() (head, body []byte)) bool {
	c := t.c
	select {
	case t.inflight <- struct{}{}:
	case <-c.closed:
		return false
	}
	if !c.b.acquire(c.closed) {
		<-t.inflight
		return false
	}
	c.reqAdd(1)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer c.reqDone()
		defer func() { <-t.inflight }()
		defer c.b.release()
		var head, body []byte
		func() {
			defer func() {
				if r := recover(); r != nil {
					c.b.log.Error("broker: text handler panicked", "cmd", cmd.Kind.String(), "remote", c.addr, "panic", r, "stack", string(debug.Stack()))
					head, body = metaq.AppendResult(nil, metaq.InternalServerError, fmt.Sprintf("internal error processing %s", cmd.Kind), cmd.Opaque), nil
				}
			}()
			head, body = fn()
		}()
		t.answer(head, body)
	}()
	return true
}

// writeLoop is the writer goroutine: it writes every answer queued on out
// and flushes when none waits; it ends when out is closed (after the
// reader and every handler finished). After a failed write it closes the
// connection and drops the rest, so that no handler blocks on it.
func (t *textConn) writeLoop(done chan<- struct{}) {
	defer close(done)
	c := t.c
	w := bufio.NewWriterSize(countingWriter{c.nc, &c.b.stats.bytesWritten}, 64<<10)
	failed := false
	for a := range t.out {
		if failed {
			continue
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second)) // a failed write reports it
		_, _ = w.Write(a.head)                                      // the sticky error shows at Flush
		_, _ = w.Write(a.body)
		if len(t.out) == 0 && w.Flush() != nil {
			failed = true
			c.close("text write failed")
		}
	}
	if !failed {
		_ = w.Flush() // the connection closes next either way
	}
}

// auth checks a line (ACL on, not yet authenticated): it must be auth
// with an admin account's keys. It answers OK, or refuses (counted) and
// reports false: the connection then closes.
func (t *textConn) auth(line []byte) bool {
	fields := strings.Fields(string(line))
	b := t.c.b
	if len(fields) == 3 && strings.ToLower(fields[0]) == "auth" && b.acl.adminCredentials(fields[1], fields[2]) {
		t.answerf("OK\r\n")
		return true
	}
	b.acl.denied.Add(acl.ReasonAdminAuth, 0)
	t.answerf("CLIENT_ERROR access denied: ACL is on; send \"auth <accessKey> <secretKey>\" of an admin account first\r\n")
	return false
}
