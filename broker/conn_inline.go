package broker

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"

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

// inlineSend reports whether the reader processes cmd itself.
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

// processSends checks the gathered sends, appends their messages together
// and queues the answers. It runs on the reader goroutine.
func (c *conn) processSends(cmds []*protocol.Command) {
	n := len(cmds)
	c.reqs.Add(n)
	c.busy.Add(int32(n))
	resps := make([]*protocol.Command, n)
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
			m := e.m
			res, err := c.b.appends.finish(e)
			req := cmds[idx[j]]
			resps[idx[j]] = c.b.sendResponse(req, m.Topic, m.QueueID, len(req.Body), []storage.AppendResult{res}, err)
		}
	}()
	for i, cmd := range cmds {
		if resps[i] != nil && !cmd.IsOneway() {
			c.send(outFrame{cmd: resps[i]})
		}
	}
	c.busy.Add(-int32(n))
	c.reqs.Add(-n)
}
