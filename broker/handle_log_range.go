package broker

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/samsamq/samsa/protocol"
)

// handleGetCommitLogRange answers GetCommitLogRange: this log's whole
// records from ext "from" up to "to" (a peer repairing a damaged range of
// its own log; package broker/repair). The records go as they lie (the
// store's ReadLog: never past what reached the kernel, never a partial
// record); the peer checks every CRC before it writes them. A range this
// log does not hold, or larger than protocol.MaxCommitLogRange, is
// refused.
func (b *Broker) handleGetCommitLogRange(_ *conn, req *protocol.Command) *protocol.Command {
	from, err1 := strconv.ParseInt(req.Ext("from"), 10, 64)
	to, err2 := strconv.ParseInt(req.Ext("to"), 10, 64)
	if err1 != nil || err2 != nil || from < 0 || to <= from || to-from > protocol.MaxCommitLogRange {
		return respond(req, protocol.SystemError, fmt.Sprintf("bad range [%s, %s): from >= 0, from < to, at most %d bytes",
			req.Ext("from"), req.Ext("to"), protocol.MaxCommitLogRange), nil)
	}
	// Allocate for what the log holds, not what was asked: a request of a
	// few bytes makes no buffer for a range past the log's end.
	handed := b.store.HandedOffset()
	if from >= handed {
		return respond(req, protocol.SystemError, fmt.Sprintf("range [%d, %d) starts at or past the log's end %d", from, to, handed), nil)
	}
	to = min(to, handed)
	buf := make([]byte, to-from)
	n := 0
	for at := from; at < to; {
		k, next, err := b.store.ReadLog(at, buf[n:])
		if errors.Is(err, io.ErrShortBuffer) {
			break // the next record passes to: the range ends before it
		}
		if err != nil {
			return respond(req, protocol.SystemError, fmt.Sprintf("read the log at %d: %v", at, err), nil)
		}
		if k == 0 || next != at+int64(k) {
			break // nothing more, or a segment's end (its blank filler)
		}
		n += k
		at = next
	}
	resp := respond(req, protocol.Success, "", nil)
	resp.Body = buf[:n]
	return resp
}
