package netx

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// Default bounds (RocketMQ's serverChannelMaxIdleTimeSeconds is 120).
const (
	DefaultIdleTimeout  = 120 * time.Second
	DefaultFrameTimeout = 30 * time.Second
)

// Errors of Deadlines.Read, matchable with errors.Is; both also match
// os.ErrDeadlineExceeded.
var (
	// ErrIdle: no byte arrived for the idle timeout while nothing of the
	// connection was in progress.
	ErrIdle = errors.New("netx: connection idle")
	// ErrFrameTimeout: a frame begun was not completed in time.
	ErrFrameTimeout = errors.New("netx: partial frame not completed in time")
)

type timeoutError struct {
	kind error
	msg  string
}

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Is(t error) bool {
	return t == e.kind || t == os.ErrDeadlineExceeded
}
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return false }

// Deadlines is the reader under a connection's read buffer: before each
// read from the socket it arms the read deadline, so that
//
//   - at a frame boundary (every byte read belongs to frames the reader
//     marked with Boundary), the connection may stay silent for Idle; when
//     it passes and Busy reports requests in progress (a held long-poll
//     pull), the wait starts again;
//   - inside a frame, the frame must be complete within Frame of the
//     first read that found it partial.
//
// It reads the socket only when the buffer above it is empty, so arming
// costs nothing per frame on a busy connection. Only the reading
// goroutine calls Read and Boundary.
type Deadlines struct {
	// Conn is where the deadline is set.
	Conn net.Conn
	// R is read (Conn, a TLS layer over it, a byte counter).
	R io.Reader
	// Idle and Frame are the bounds (<= 0: DefaultIdleTimeout,
	// DefaultFrameTimeout).
	Idle, Frame time.Duration
	// Busy, if set, reports requests of the connection in progress.
	Busy func() bool
	// Stop, if set, reports that the server is closing: Read then leaves
	// the deadline to the server and returns os.ErrDeadlineExceeded.
	Stop func() bool

	read        int64     // bytes read from R
	framed      int64     // bytes of frames the reader finished
	partialFrom int64     // framed when partialSince was taken
	partialAt   time.Time // first read that found the frame partial
	lastByte    time.Time
	armed       time.Time // the deadline last set
}

// Boundary tells that the reader is between frames with buffered bytes
// of the next ones still in its buffer (bufio.Reader.Buffered()).
func (d *Deadlines) Boundary(buffered int) { d.framed = d.read - int64(buffered) }

// Read implements io.Reader.
func (d *Deadlines) Read(p []byte) (int, error) {
	idle, frame := d.Idle, d.Frame
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	if frame <= 0 {
		frame = DefaultFrameTimeout
	}
	for {
		if d.stopping() {
			return 0, os.ErrDeadlineExceeded
		}
		now := time.Now()
		if d.lastByte.IsZero() {
			d.lastByte = now
		}
		between := d.read == d.framed
		var dl time.Time
		if between {
			dl = d.lastByte.Add(idle)
		} else {
			if d.partialAt.IsZero() || d.partialFrom != d.framed {
				d.partialAt, d.partialFrom = now, d.framed
			}
			dl = d.partialAt.Add(frame)
		}
		// Between frames the deadline moves with every byte; while the
		// one armed is still ahead it is re-armed only when it moved by
		// an eighth of Idle (at most a second): a timeout that comes
		// early is checked against lastByte below.
		if between && d.armed.After(now) && !dl.Before(d.armed) && dl.Sub(d.armed) < min(idle/8, time.Second) {
			dl = d.armed
		}
		if !dl.Equal(d.armed) {
			_ = d.Conn.SetReadDeadline(dl)
			d.armed = dl
			if d.stopping() { // Stop set before our deadline replaced the server's
				return 0, os.ErrDeadlineExceeded
			}
		}
		n, err := d.R.Read(p)
		if n > 0 {
			d.read += int64(n)
			d.lastByte = time.Now()
			return n, err
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || d.stopping() {
			return 0, err
		}
		if !between {
			return 0, &timeoutError{ErrFrameTimeout, fmt.Sprintf("a frame begun was not completed within %v", frame)}
		}
		if time.Since(d.lastByte) < idle {
			continue // armed early (above): arm again from lastByte
		}
		if d.Busy != nil && d.Busy() {
			d.lastByte = time.Now()
			continue
		}
		return 0, &timeoutError{ErrIdle, fmt.Sprintf("no request for %v", idle)}
	}
}

func (d *Deadlines) stopping() bool { return d.Stop != nil && d.Stop() }
