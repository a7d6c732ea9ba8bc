package broker

import (
	"net"

	"github.com/samsamq/samsa/internal/netx"
)

// Pulls from the files.
//
// A pull answer whose records need no read-time check (zeroCopyPull)
// carries them as runs of segment files (storage.GetMessagesFile), not
// bytes: the writer writes the frame's header with the batch's other
// frames (one writev), then each run with one sendfile(2), the kernel
// moving the bytes from the page cache to the socket. The headers before
// a run are written with MSG_MORE: a header does not leave in a packet of
// its own, which cost the reader a wakeup more per answer (on loopback,
// the sendfile path measured no cheaper than the heap path until the
// header waited for its body; TCP_CORK did that first, at two setsockopt
// calls per answer, 13% of the broker's CPU on that path). The process never
// reads them: no copy out of the kernel, no CRC pass (the client checks
// it), no pooled buffer. TLS connections cannot (the bytes must be
// encrypted in the process; kTLS would let the kernel do it, future
// work) and read as before.

// fileCut marks where, in a batch's buffers, frame's file pieces go.
type fileCut struct {
	at    int // index in the batch's net.Buffers
	frame int // index in the batch
}

// writeBatch writes bufs, and the file pieces of the frames cuts name at
// their places. It counts the bytes written.
func (c *conn) writeBatch(bufs net.Buffers, cuts []fileCut, batch []outFrame) error {
	from := 0
	for _, cut := range cuts {
		if cut.at > from {
			// Held (MSG_MORE) for the file bytes that follow: the headers
			// leave with them, not in a packet of their own.
			n, err := netx.WriteMore(c.fileConn, bufs[from:cut.at])
			c.b.stats.bytesWritten.Add(n)
			if err != nil {
				return err
			}
		}
		from = cut.at
		for _, p := range batch[cut.frame].files.Pieces {
			n, err := netx.SendFile(c.fileConn, p.Fd, p.Off, p.N)
			c.b.stats.bytesWritten.Add(n)
			c.b.stats.sentFromFile.Add(n)
			if err != nil {
				return err
			}
		}
	}
	if from < len(bufs) {
		wb := bufs[from:]
		n, err := wb.WriteTo(c.nc)
		c.b.stats.bytesWritten.Add(n)
		return err
	}
	return nil
}

// zeroCopyPull says whether pc's records may go from the files unread:
// the switch is off (transferMsgByHeap false), the connection is plain
// TCP, no SQL92 filter reads them, and no read-time check is due
// (pullReadCheck: never, or auto with a client that checks CRCs), and
// the pull does not ask for one (a client's second try after it refused
// a corrupt record).
func zeroCopyPull(cfg *Config, pc *pullCtx) bool {
	if cfg.TransferMsgByHeap || pc.c.fileConn == nil || pc.sql != nil || pc.h.AskBrokerCheck {
		return false
	}
	switch cfg.PullReadCheck {
	case PullReadCheckNever:
		return true
	case PullReadCheckAlways:
		return false
	}
	return pc.h.ClientChecksCRC || pc.c.checksCRC.Load()
}
