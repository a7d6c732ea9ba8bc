package ha

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/internal/netx"
)

// slaveLink is the slave's end of one connection.
type slaveLink struct {
	s    *Slave
	conn net.Conn
	fr   frameReader

	wmu    sync.Mutex // one writer at a time: the apply loop (or flushAcks), the heartbeat
	wbuf   [envelopeSize + offsetFrameSize]byte
	acked  atomic.Int64 // last offset acknowledged
	ackedT atomic.Int64 // when (unix ns)

	// With AckFlushed, the apply loop goes on appending while flushAcks
	// syncs and acknowledges what it appended (flushTo, kicked by
	// flushKick): the frames that arrive during one fdatasync share the
	// next. flushErr is why flushAcks ended the link.
	flushTo   atomic.Int64
	flushKick chan struct{}
	flushMu   sync.Mutex
	flushErr  error
}

// session runs one link to addr until it fails. progressed says whether
// it applied any frame (the back-off then restarts from its minimum).
func (s *Slave) session(addr string) (progressed bool, err error) {
	var c net.Conn
	if s.cfg.Dial != nil {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
		c, err = s.cfg.Dial(ctx, addr)
		cancel()
	} else {
		d := net.Dialer{Timeout: s.cfg.DialTimeout}
		c, err = d.DialContext(s.ctx, "tcp", addr)
	}
	if err != nil {
		return false, fmt.Errorf("dial %s: %w", addr, err)
	}
	if s.cfg.TLS != nil {
		if c, err = netx.ClientHandshake(c, addr, s.cfg.TLS, s.cfg.DialTimeout); err != nil {
			return false, err
		}
	}
	defer func() { _ = c.Close() }() // the session is over either way
	defer context.AfterFunc(s.ctx, func() { _ = c.Close() })()
	l := &slaveLink{s: s, conn: c, fr: frameReader{r: bufio.NewReaderSize(c, 64<<10)}}
	start, maxData, err := l.handshake()
	if err != nil {
		return false, err
	}
	s.setConnected(addr)
	s.lg.Info("ha: slave following", "master", addr, "from", start)
	return l.follow(maxData)
}

// handshake sends HANDSHAKE, aligns the local log with the master's
// answer and sends TRANSFER-START. It returns where streaming starts and
// the largest frame data the master will send.
func (l *slaveLink) handshake() (int64, int, error) {
	s := l.s
	if err := l.conn.SetDeadline(time.Now().Add(s.cfg.HousekeepingInterval)); err != nil {
		return 0, 0, fmt.Errorf("write HANDSHAKE: set deadline: %w", err)
	}
	// A failed clear leaves the deadline behind, but every later read and
	// write of the link sets its own.
	defer func() { _ = l.conn.SetDeadline(time.Time{}) }()
	hs := handshake{BrokerID: s.cfg.BrokerID, Addr: s.cfg.Addr, SegmentSize: s.log.SegmentSize(),
		MaxBody: s.cfg.MaxBatchSize, FromLastSegment: s.cfg.FromLastSegment,
		AccessKey: s.cfg.AccessKey, SecretKey: s.cfg.SecretKey, TimeMs: time.Now().UnixMilli()}
	if _, err := l.conn.Write(appendHandshake(nil, hs)); err != nil {
		return 0, 0, fmt.Errorf("write HANDSHAKE: %w", err)
	}
	p, err := l.fr.next(kindHandshakeReply, maxReply)
	if err != nil {
		return 0, 0, fmt.Errorf("read HANDSHAKE answer: %w", err)
	}
	rep, err := decodeHandshakeReply(p)
	switch {
	case err != nil:
		return 0, 0, err
	case rep.Refused:
		return 0, 0, fmt.Errorf("%w: %s", ErrRefused, rep.Reason)
	case rep.SegmentSize != hs.SegmentSize:
		return 0, 0, fmt.Errorf("%w: master segment size %d, local %d", ErrRefused, rep.SegmentSize, hs.SegmentSize)
	case rep.MaxBody > s.cfg.MaxBatchSize:
		return 0, 0, fmt.Errorf("%w: master frames of %d bytes, bound %d", ErrProtocol, rep.MaxBody, s.cfg.MaxBatchSize)
	}
	start, err := s.align(rep)
	if err != nil {
		return 0, 0, err
	}
	if err := l.sendOffset(kindTransferStart, start); err != nil {
		return 0, 0, fmt.Errorf("write TRANSFER-START: %w", err)
	}
	return start, rep.MaxBody, nil
}

// follow applies TRANSFER frames and acknowledges each, until an error.
func (l *slaveLink) follow(maxData int) (progressed bool, err error) {
	s := l.s
	hbDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go l.heartbeat(hbDone, &wg)
	if s.cfg.AckFlushed {
		l.flushTo.Store(l.acked.Load())
		l.flushKick = make(chan struct{}, 1)
		wg.Add(1)
		go l.flushAcks(hbDone, &wg)
	}
	defer wg.Wait()
	defer close(hbDone)
	for {
		if err := s.cfg.Fault.wait(s.ctx); err != nil {
			return progressed, err
		}
		if err := l.conn.SetReadDeadline(time.Now().Add(s.cfg.HousekeepingInterval)); err != nil {
			return progressed, fmt.Errorf("read TRANSFER: set deadline: %w", err)
		}
		p, err := l.fr.next(kindTransfer, transferHeaderSize+maxData)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return progressed, fmt.Errorf("master silent for %v: %w", s.cfg.HousekeepingInterval, err)
			}
			if ferr := l.flushFailed(); ferr != nil {
				return progressed, ferr
			}
			return progressed, fmt.Errorf("read TRANSFER: %w", err)
		}
		if err := s.cfg.Fault.wait(s.ctx); err != nil {
			return progressed, err
		}
		end, err := l.apply(p)
		if err != nil {
			return progressed, err
		}
		progressed = true
		if s.cfg.AckFlushed {
			if end > l.flushTo.Load() {
				l.flushTo.Store(end)
				select {
				case l.flushKick <- struct{}{}:
				default:
				}
			}
			continue
		}
		if err := l.sendOffset(kindAck, end); err != nil {
			return progressed, fmt.Errorf("write ACK: %w", err)
		}
	}
}

// flushAcks is the link's third goroutine with AckFlushed: it syncs the
// log up to what the apply loop appended and acknowledges it, again while
// more was appended meanwhile. A failure ends the link (its connection is
// closed; follow returns the failure). Ends when done closes.
func (l *slaveLink) flushAcks(done <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	s := l.s
	for {
		select {
		case <-l.flushKick:
		case <-done:
			return
		}
		for {
			to := l.flushTo.Load()
			if to <= l.acked.Load() {
				break
			}
			if s.cfg.Fault.wait(s.ctx) != nil { // a stalled slave acknowledges nothing
				return
			}
			err := s.log.FlushTo(s.ctx, to)
			if err != nil {
				err = fmt.Errorf("flush to %d: %w", to, err)
			} else if err = l.sendOffset(kindAck, to); err != nil {
				err = fmt.Errorf("write ACK: %w", err)
			}
			if err != nil {
				l.flushMu.Lock()
				l.flushErr = err
				l.flushMu.Unlock()
				_ = l.conn.Close() // the apply loop sees it and ends the link
				return
			}
		}
	}
}

// flushFailed is the error that made flushAcks end the link, if any.
func (l *slaveLink) flushFailed() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushErr
}

// apply checks and appends one TRANSFER frame and returns the offset to
// acknowledge.
func (l *slaveLink) apply(p []byte) (int64, error) {
	s := l.s
	h, data, err := decodeTransfer(p)
	if err != nil {
		return 0, err
	}
	w := s.log.WrittenOffset()
	if h.Offset != w {
		return 0, fmt.Errorf("%w: frame at %d, local log ends at %d", ErrGap, h.Offset, w)
	}
	end := w
	if h.Size > 0 {
		// The epoch is durable before the data it covers.
		if err := s.epochs.Record(Epoch{Epoch: h.Epoch, Start: h.EpochStart}, h.Offset); err != nil {
			return 0, err
		}
		s.cfg.Fault.mangle(data)
		if end, err = s.log.AppendReplicated(s.ctx, h.Offset, data); err != nil {
			return 0, fmt.Errorf("append %d bytes at %d: %w", h.Size, h.Offset, err)
		}
		if end < h.Offset+int64(h.Size) || end > h.Handed {
			// (A segment's filler comes as its header: end is then the
			// next segment base, past the bytes, never past the master.)
			return 0, fmt.Errorf("%w: appending %d bytes at %d ended at %d (master handed %d)", ErrGap, h.Size, h.Offset, end, h.Handed)
		}
	}
	s.noteFrame(h, end)
	return end, nil
}

// heartbeat is the link's second goroutine: it acknowledges again when
// nothing was acknowledged for HeartbeatInterval (not while stalled).
// Ends when done closes.
func (l *slaveLink) heartbeat(done <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	every := l.s.cfg.HeartbeatInterval
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if l.s.cfg.Fault.stalled() || time.Since(time.Unix(0, l.ackedT.Load())) < every {
				continue
			}
			if err := l.sendOffset(kindAck, -1); err != nil {
				_ = l.conn.Close() // the apply loop sees it and ends the link
				return
			}
		case <-done:
			return
		}
	}
}

// sendOffset writes a TRANSFER-START or ACK frame; off -1 repeats the
// last acknowledgement (read under the lock, so acks never go back).
func (l *slaveLink) sendOffset(kind byte, off int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if off < 0 {
		off = l.acked.Load()
	}
	putOffsetFrame(&l.wbuf, kind, off)
	if err := l.conn.SetWriteDeadline(time.Now().Add(l.s.cfg.HousekeepingInterval)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	if _, err := l.conn.Write(l.wbuf[:]); err != nil {
		return err
	}
	l.acked.Store(off)
	l.ackedT.Store(time.Now().UnixNano())
	return nil
}
