package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// maxInlineSends bounds the sends the reader gathers before it appends
// them.
const maxInlineSends = 128

// Inline sends. When the store does not make an append wait for a flush
// (b.appends is set), a single send never blocks for long, so the reader
// processes it itself instead of handing it to a worker: it gathers the
// sends whose frames are already whole in its buffer (a pipelining client
// writes many at once), appends their messages together through the
// combiner, and queues their answers, which the writer then sends in one
// go. No goroutine hand-off a message, one store round for the lot.

// readRequest reads the next request. A frame that fits the reader's
// buffer is decoded where it lies: no allocation and no copy for it. Its
// Body then aliases the buffer (aliased), which stays put only until the
// reader has to wait for more bytes: serve processes the inline sends it
// gathered before that, and copies the body of any other request, which
// outlives the read. Other frames, and every error, go through
// protocol.ReadRequest, so the errors are its own.
func (c *conn) readRequest() (cmd *protocol.Command, aliased bool, err error) {
	maxFrame := int64(c.b.cfg.MaxFrameSize)
	if maxFrame <= 0 {
		maxFrame = protocol.DefaultMaxFrame
	}
	if p, err := c.br.Peek(4); err == nil {
		l := int64(int32(binary.BigEndian.Uint32(p)))
		if l >= 4 && l <= maxFrame && 4+l <= int64(c.br.Size()) {
			if frame, err := c.br.Peek(int(4 + l)); err == nil {
				decode := protocol.DecodeRequestFrame
				if c.b.acl != nil {
					decode = protocol.DecodeFrame // the signature is over the ext fields as sent
				}
				cmd, err := decode(frame[4:])
				_, _ = c.br.Discard(len(frame))
				return cmd, err == nil, err
			}
		}
	}
	if c.b.acl != nil {
		cmd, err = protocol.ReadCommand(c.br, c.b.cfg.MaxFrameSize, nil)
		return cmd, false, err
	}
	cmd, err = protocol.ReadRequest(c.br, c.b.cfg.MaxFrameSize, nil)
	return cmd, false, err
}

// ownBody gives cmd a body of its own if it aliases the read buffer.
func ownBody(cmd *protocol.Command, aliased bool) {
	if aliased && cmd.Body != nil {
		cmd.Body = bytes.Clone(cmd.Body)
	}
}

// inlineSend reports whether the reader processes cmd itself. On a
// SYNC_MASTER it does too: the reader never waits for the slaves; each
// stored send's answer waits in the replication link's queue
// (WaitReplicatedFunc) and the acknowledgement that covers it sends it
// (replicated), so neither a worker goroutine nor a wake-up of one stands
// between a slave's acknowledgement and the answer.
func (c *conn) inlineSend(cmd *protocol.Command) bool {
	return c.b.appends != nil && (cmd.Code == protocol.SendMessage || cmd.Code == protocol.SendMessageV2)
}

// nextFrameBuffered reports whether a whole frame is already in the
// reader's buffer, so reading it will not wait for the network.
func (c *conn) nextFrameBuffered() bool {
	n := c.br.Buffered()
	if n < 4 {
		return false
	}
	p, err := c.br.Peek(4)
	if err != nil {
		return false
	}
	l := int64(int32(binary.BigEndian.Uint32(p)))
	return l >= 0 && int64(n) >= 4+l
}

// handleSends checks the gathered sends, appends their messages together
// and queues the answers. It runs on the reader goroutine.
func (c *conn) handleSends(cmds []*protocol.Command) {
	n := len(cmds)
	start := time.Now()
	c.reqAdd(n)
	c.busy.Add(int32(n))
	resps := make([]*protocol.Command, n)
	deferred := 0 // answers the replication link will send (replicated)
	func() {
		defer func() {
			if r := recover(); r != nil {
				c.b.log.Error("broker: send processing panicked", "remote", c.addr, "panic", r, "stack", string(debug.Stack()))
				for i, cmd := range cmds {
					if resps[i] == nil {
						resps[i] = protocol.NewResponse(cmd, protocol.SystemError, fmt.Sprintf("internal error processing request code %d", cmd.Code))
					}
				}
			}
		}()
		idx := make([]int, 0, n)
		entries := make([]*combineEntry, 0, n)
		for i, cmd := range cmds {
			if c.b.acl != nil {
				if resp := c.b.aclCheck(c, cmd); resp != nil {
					resps[i] = resp
					continue
				}
			}
			m, resp := c.b.prepareSend(c, cmd)
			if resp != nil {
				resps[i] = resp
				continue
			}
			idx = append(idx, i)
			entries = append(entries, c.b.appends.get(m))
		}
		if len(entries) == 0 {
			return
		}
		c.b.appends.run(entries)
		for j, e := range entries {
			topic, queue := answerTarget(e.m)
			res, err := c.b.appends.finish(e)
			req := cmds[idx[j]]
			rs := []storage.AppendResult{res}
			resp, replicate := c.b.appendResponse(req, topic, queue, len(req.Body), rs, err)
			if replicate && c.replicated(req, resp, rs) {
				deferred++
				continue
			}
			resps[idx[j]] = resp
		}
	}()
	for i, cmd := range cmds {
		c.b.metrics.req.done(cmd.Code, resps[i], start)
		if resps[i] != nil && !cmd.IsOneway() {
			c.send(outFrame{cmd: resps[i]})
		}
	}
	c.busy.Add(-int32(n))
	c.pending.Add(-int32(n - deferred))
	c.reqs.Add(-(n - deferred))
}

// replicated settles a stored send's answer on a SYNC_MASTER. When the
// slaves' outcome is known at once it sets resp's code and returns false:
// the caller sends resp. Otherwise it returns true and the replication
// link sends resp once the slaves hold the record or the wait fails; the
// request stays counted in c.reqs until then (drain waits for it), and
// holds a slot of the broker's request semaphore, so a connection cannot
// pile up unbounded waits: the reader blocks in acquire instead.
func (c *conn) replicated(req, resp *protocol.Command, res []storage.AppendResult) bool {
	b := c.b
	if b.repl.link == nil {
		b.stats.slaveNotAvailable.Add(1)
		resp.Code, resp.Remark = protocol.SlaveNotAvailable, "no slave attached to this SYNC_MASTER"
		return false
	}
	if !b.acquire(c.closed) {
		resp.Code, resp.Remark = b.repl.replicaOutcome(errSlaveNotAvailable)
		return false
	}
	last := res[len(res)-1]
	oneway := req.IsOneway()
	done, err := b.repl.link.WaitReplicatedFunc(last.PhysicalOffset+int64(last.Size), func(err error) {
		if code, remark := b.repl.replicaOutcome(err); code != protocol.Success {
			resp.Code, resp.Remark = code, remark
		}
		b.release()
		if oneway || c.trySend(outFrame{cmd: resp}) {
			c.reqDone()
			return
		}
		// The writer's queue is full: never block the link's goroutine
		// (every slave acknowledgement runs through it).
		go func() {
			c.send(outFrame{cmd: resp})
			c.reqDone()
		}()
	})
	if done {
		b.release()
		if code, remark := b.repl.replicaOutcome(err); code != protocol.Success {
			resp.Code, resp.Remark = code, remark
		}
		return false
	}
	return true
}
