package ha

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// link is the master's end of one slave's connection.
type link struct {
	m        *Master
	conn     net.Conn
	remote   string
	brokerID int64
	addr     string
	batch    int // log bytes per frame for this slave
	maxData  int // the largest frame's log bytes (a record above batch)

	kick      chan struct{} // OnHanded: more to send (capacity 1)
	done      chan struct{} // closed by close
	closeOnce sync.Once
	reason    error // why the link closed; set in close

	ack   atomic.Int64 // highest offset the slave acknowledged
	sent  atomic.Int64 // end of what the sender has put on the wire
	heard atomic.Int64 // Master.now() of the last frame from the slave

	// Guarded by Master.mu.
	inSync bool
	since  int64
}

// close ends the link once, with its reason.
func (l *link) close(reason error) {
	l.closeOnce.Do(func() {
		l.reason = reason
		close(l.done)
		_ = l.conn.Close() // the link is over; reason says why
	})
}

// serve runs one connection: the handshake, then the acknowledgements
// (while a sender goroutine streams the log). It owns the connection.
func (m *Master) serve(raw net.Conn) {
	defer m.wg.Done()
	c := raw
	defer func() {
		_ = c.Close() // the connection is over either way
		_ = raw.Close()
		m.mu.Lock()
		delete(m.mu.conns, raw)
		m.mu.Unlock()
	}()
	remote := raw.RemoteAddr().String()
	if m.cfg.Accept != nil {
		ac, err := m.cfg.Accept(raw)
		if err != nil {
			if !m.closed.Load() {
				m.lg.Info("ha: connection closed before its handshake", "remote", remote, "err", err)
			}
			return
		}
		c = ac
	}
	fr := &frameReader{r: bufio.NewReaderSize(c, 512)}
	l, err := m.handshake(c, fr, remote)
	if err != nil {
		if !m.closed.Load() {
			// A refused slave retries every few seconds: say it once.
			level := slog.LevelWarn
			if msg := err.Error(); m.lastRefusal.Swap(msg) == msg {
				level = slog.LevelDebug
			}
			m.lg.Log(context.Background(), level, "ha: slave handshake failed", "remote", remote, "err", err)
		}
		return
	}
	if !m.register(l) {
		return
	}
	m.lg.Info("ha: slave connected", "brokerId", l.brokerID, "addr", l.addr, "remote", remote, "from", l.ack.Load())
	m.wg.Add(1)
	go l.send(l.ack.Load())
	err = l.readAcks(fr)
	l.close(err)
	m.unregister(l)
	if !m.closed.Load() {
		m.lg.Warn("ha: slave link dropped", "brokerId", l.brokerID, "addr", l.addr, "ack", l.ack.Load(), "err", l.reason)
	}
}

// handshake reads the slave's HANDSHAKE, answers it and reads its
// TRANSFER-START. The whole exchange must finish within
// HousekeepingInterval.
func (m *Master) handshake(c net.Conn, fr *frameReader, remote string) (*link, error) {
	if err := c.SetDeadline(time.Now().Add(m.cfg.HousekeepingInterval)); err != nil {
		return nil, fmt.Errorf("read HANDSHAKE: set deadline: %w", err)
	}
	// A failed clear leaves the deadline behind, but every later read and
	// write of the link sets its own.
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	p, err := fr.next(kindHandshake, maxHandshake)
	if err != nil {
		return nil, fmt.Errorf("read HANDSHAKE: %w", err)
	}
	hs, err := decodeHandshake(p)
	if err != nil {
		return nil, err
	}
	seg, maxRec := m.log.SegmentSize(), m.log.MaxRecordSize()
	var reason string
	switch {
	case hs.BrokerID <= 0:
		reason = fmt.Sprintf("broker id %d: a slave's id must be positive", hs.BrokerID)
	case hs.SegmentSize != seg:
		reason = fmt.Sprintf("segment size %d differs from the master's %d: set the same CommitLog segment size on both", hs.SegmentSize, seg)
	case hs.MaxBody < maxRec:
		reason = fmt.Sprintf("the slave takes frames of %d bytes, the master's records reach %d: set the same max message size on both", hs.MaxBody, maxRec)
	default:
		if reason = m.authRefusal(hs, time.Now()); reason != "" && m.cfg.OnAuthRefused != nil {
			m.cfg.OnAuthRefused(hs.AccessKey, reason)
		}
	}
	batch := min(m.cfg.TransferBatchSize, hs.MaxBody)
	rep := handshakeReply{SegmentSize: seg, MinOffset: m.log.CommitLogMinOffset(), Handed: m.log.HandedOffset(),
		MaxBody: max(batch, maxRec, min(hs.MaxBody, catchUpBatch)), Epochs: m.epochs}
	if reason != "" {
		rep = handshakeReply{Refused: true, Reason: reason, SegmentSize: seg}
	}
	if _, err := c.Write(appendHandshakeReply(nil, rep)); err != nil {
		return nil, fmt.Errorf("write HANDSHAKE answer: %w", err)
	}
	if reason != "" {
		return nil, fmt.Errorf("%w: slave %d: %s", ErrRefused, hs.BrokerID, reason)
	}
	if p, err = fr.next(kindTransferStart, offsetFrameSize); err != nil {
		return nil, fmt.Errorf("read TRANSFER-START: %w", err)
	}
	from, err := decodeOffset(p, kindTransferStart)
	if err != nil {
		return nil, err
	}
	if h := m.log.HandedOffset(); from > h {
		return nil, fmt.Errorf("%w: slave %d starts at %d, past the master's handed offset %d", ErrProtocol, hs.BrokerID, from, h)
	}
	addr := hs.Addr
	if addr == "" {
		addr = remote
	}
	l := &link{m: m, conn: c, remote: remote, brokerID: hs.BrokerID, addr: addr, batch: batch, maxData: rep.MaxBody,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	l.ack.Store(from)
	l.sent.Store(from)
	l.heard.Store(m.now())
	return l, nil
}

// readAcks reads the slave's acknowledgements until the link fails or a
// slave stays silent for HousekeepingInterval.
func (l *link) readAcks(fr *frameReader) error {
	m := l.m
	for {
		if err := l.conn.SetReadDeadline(time.Now().Add(m.cfg.HousekeepingInterval)); err != nil {
			return fmt.Errorf("read ACK: set deadline: %w", err)
		}
		p, err := fr.next(kindAck, offsetFrameSize)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("slave silent for %v: %w", m.cfg.HousekeepingInterval, err)
			}
			return fmt.Errorf("read ACK: %w", err)
		}
		off, err := decodeOffset(p, kindAck)
		if err != nil {
			return err
		}
		if prev := l.ack.Load(); off < prev {
			return fmt.Errorf("%w: ACK %d after %d", ErrProtocol, off, prev)
		}
		if sent := l.sent.Load(); off > sent {
			return fmt.Errorf("%w: ACK %d beyond the %d sent", ErrProtocol, off, sent)
		}
		m.onAck(l, off)
	}
}

// send is the sender goroutine: it streams the log from `from` in frames
// of at most one epoch, woken by OnHanded (kick) and, when idle, by the
// heartbeat ticker. One buffer serves the link's life. Ends when the link
// closes or a read or write fails (it then closes the link).
func (l *link) send(from int64) {
	m := l.m
	defer m.wg.Done()
	buf := make([]byte, transferFrameHeader+l.maxData)
	hb := time.NewTicker(m.cfg.HeartbeatInterval)
	defer hb.Stop()
	next := from
	wrote := false
	for {
		for {
			end, err := l.sendBatch(buf, next)
			if err != nil {
				l.close(err)
				return
			}
			if end == next {
				break
			}
			next = end
			wrote = true
		}
		select {
		case <-l.kick:
		case <-hb.C:
			if !wrote {
				if err := l.write(buf, next, 0, next); err != nil {
					l.close(err)
					return
				}
			}
			wrote = false
		case <-l.done:
			return
		}
	}
}

// A slave at least catchUpGap bytes behind the handed offset is sent
// frames of up to catchUpBatch log bytes (never more than it said it
// takes) rather than TransferBatchSize.
const (
	catchUpGap   = 8 << 20
	catchUpBatch = 1 << 20
)

// sendBatch reads the log at next, up to the batch size and never past
// next's epoch, and sends it as one frame. It returns where the log
// continues after what it sent (next: nothing new).
func (l *link) sendBatch(buf []byte, next int64) (int64, error) {
	_, boundary := epochFor(l.m.epochs, next)
	limit := int64(l.batch)
	if l.m.log.HandedOffset()-next >= catchUpGap {
		// Far behind (a new slave, or one back from an outage): frames of
		// up to catchUpBatch cost the slave one apply and one ACK per
		// MiB instead of per batch, and no waiting producer's ack is at
		// stake this far from the head.
		limit = int64(min(l.maxData, catchUpBatch))
	}
	if boundary-next < limit {
		limit = boundary - next
	}
	data := buf[transferFrameHeader:]
	n, end, err := l.m.log.ReadLog(next, data[:limit])
	if errors.Is(err, io.ErrShortBuffer) || (err == nil && n == 0 && limit < int64(len(data)) && l.m.log.HandedOffset() > next) {
		// A record above the batch size goes alone. (A log that answers
		// a short buffer with 0, nil is caught by the second test.)
		limit = min(int64(len(data)), boundary-next)
		if n, end, err = l.m.log.ReadLog(next, data[:limit]); err == nil && n == 0 && l.m.log.HandedOffset() > next {
			return next, fmt.Errorf("the log returns nothing at %d below its handed offset, even into %d bytes", next, limit)
		}
	}
	if err != nil {
		return next, fmt.Errorf("read the log at %d: %w", next, err)
	}
	if n == 0 {
		return next, nil
	}
	if end < next+int64(n) {
		return next, fmt.Errorf("the log read %d bytes at %d but continues at %d", n, next, end)
	}
	return end, l.write(buf, next, n, end)
}

// write sends the TRANSFER frame in buf carrying n log bytes from next,
// which reach end in the log (n == 0: a heartbeat, end == next).
func (l *link) write(buf []byte, next int64, n int, end int64) error {
	m := l.m
	i, _ := epochFor(m.epochs, next)
	e := m.epochs[i]
	h := transferHeader{Offset: next, Epoch: e.Epoch, EpochStart: min(e.Start, next), Confirm: m.ConfirmOffset(),
		Handed: max(m.log.HandedOffset(), end), Size: n}
	putTransferHeader(buf, h)
	l.sent.Store(end)
	if err := l.conn.SetWriteDeadline(time.Now().Add(m.cfg.HousekeepingInterval)); err != nil {
		return fmt.Errorf("write TRANSFER at %d: set deadline: %w", next, err)
	}
	if _, err := l.conn.Write(buf[:transferFrameHeader+n]); err != nil {
		return fmt.Errorf("write TRANSFER at %d: %w", next, err)
	}
	return nil
}
