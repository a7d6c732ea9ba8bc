package linkdelay

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// maxMarks bounds the read chunks one direction holds at once (with the
// ring, it bounds the direction's memory whatever the read sizes).
const maxMarks = 4096

// errTornDown ends a direction whose connection was closed under it.
var errTornDown = errors.New("linkdelay: connection torn down")

// mark says when the bytes up to end (a count since the connection
// began) may leave: oneWay after the read that brought them in.
type mark struct {
	end uint64
	due time.Time
}

// pipe is one direction of a proxied connection. Its reader goroutine
// reads src into a ring and stamps each chunk with its due time; its writer
// goroutine writes each chunk to dst once due, in order. The ring is the
// direction's only buffer: when it (or the mark queue) is full the reader
// stops reading, src's socket buffer fills and the sender is held back.
type pipe struct {
	src, dst *net.TCPConn
	oneWay   time.Duration
	done     <-chan struct{} // closed when the connection is torn down
	buf      []byte          // the ring; the reader fills [tail, head+len), the writer drains [head, tail)

	readable chan struct{} // cap 1: the reader added a mark or stopped
	writable chan struct{} // cap 1: the writer freed ring space

	mu struct {
		sync.Mutex
		head, tail uint64 // bytes written to dst, read from src
		marks      []mark // pending chunks from marks[first], ends increasing
		first      int
		readErr    error // io.EOF or the error that stopped the reader
	}
}

func newPipe(src, dst *net.TCPConn, oneWay time.Duration, ring int, done <-chan struct{}) *pipe {
	return &pipe{src: src, dst: dst, oneWay: oneWay, done: done, buf: make([]byte, ring),
		readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// readLoop runs in the reader goroutine until src fails or ends, or the
// connection is torn down. It owns src's read side and the free part of
// the ring.
func (p *pipe) readLoop() {
	defer kick(p.readable)
	for {
		start, n, ok := p.waitSpace()
		if !ok {
			return
		}
		k, err := p.src.Read(p.buf[start : start+n])
		now := time.Now()
		p.mu.Lock()
		if k > 0 {
			p.mu.tail += uint64(k)
			p.mu.marks = append(p.mu.marks, mark{end: p.mu.tail, due: now.Add(p.oneWay)})
		}
		if err != nil {
			p.mu.readErr = err
		}
		if p.mu.tail-p.mu.head > uint64(len(p.buf)) {
			panic("linkdelay: ring overrun") // the reader read past free space
		}
		p.mu.Unlock()
		kick(p.readable)
		if err != nil {
			return
		}
	}
}

// waitSpace blocks until the ring has free space and the mark queue room,
// and returns the contiguous free run to read into; ok is false when the
// connection was torn down.
func (p *pipe) waitSpace() (start, n int, ok bool) {
	size := uint64(len(p.buf))
	for {
		p.mu.Lock()
		used := p.mu.tail - p.mu.head
		if used < size && len(p.mu.marks)-p.mu.first < maxMarks {
			start = int(p.mu.tail % size)
			n = int(min(size-used, size-uint64(start)))
			p.mu.Unlock()
			return start, n, true
		}
		p.mu.Unlock()
		select {
		case <-p.writable:
		case <-p.done:
			return 0, 0, false
		}
	}
}

// writeLoop runs in the writer goroutine: it sleeps until the oldest
// chunk is due, writes every chunk due by then in one go, and frees their
// space. After the reader's clean EOF and the last chunk it half-closes
// dst, delayed like the data; it returns nil then, or the error that ended
// the direction (a read error passed on after the bytes before it, a
// write error, or errTornDown).
func (p *pipe) writeLoop() error {
	for {
		p.mu.Lock()
		if p.mu.first == len(p.mu.marks) {
			err := p.mu.readErr
			p.mu.Unlock()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return p.dst.CloseWrite()
				}
				return err
			}
			select {
			case <-p.readable:
			case <-p.done:
				return errTornDown
			}
			continue
		}
		due := p.mu.marks[p.mu.first].due
		p.mu.Unlock()
		if !sleepUntil(due, p.done) {
			return errTornDown
		}
		head, end := p.takeDue(time.Now())
		if err := p.write(head, end); err != nil {
			return err
		}
		p.mu.Lock()
		p.mu.head = end
		p.mu.Unlock()
		kick(p.writable)
	}
}

// sleepStep bounds one nanosleep, so a torn-down connection's writer
// notices within it.
const sleepStep = 2 * time.Millisecond

// sleepUntil blocks until t and reports true, or false once done is
// closed. It sleeps in nanosleep, not on a Go timer: Go's timers wake
// through the netpoller, whose wait rounds anything under a millisecond up
// to one, while nanosleep is the kernel's high-resolution timer. Measured
// on the lab's 2-vCPU VM, a round trip through the proxy takes a median
// 0.2–0.4 ms more than 2×oneWay (timer slack, interrupt, thread and
// goroutine wake-ups); on a Go timer it took 0.6–1.4 ms more. Making the
// thread's timer slack 1 ns instead of 50 µs made no difference beyond
// the noise. The sleeping goroutine holds its OS thread, as any blocking
// system call does.
func sleepUntil(t time.Time, done <-chan struct{}) bool {
	for {
		select {
		case <-done:
			return false
		default:
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		ts := syscall.NsecToTimespec(int64(min(d, sleepStep)))
		_ = syscall.Nanosleep(&ts, nil) // EINTR (a signal): the loop sleeps the rest
	}
}

// takeDue pops every mark due by now (at least the first, which the
// caller saw due) and returns the byte range they cover.
func (p *pipe) takeDue(now time.Time) (head, end uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.mu.first + 1
	for i < len(p.mu.marks) && !p.mu.marks[i].due.After(now) {
		i++
	}
	head, end = p.mu.head, p.mu.marks[i-1].end
	if i == len(p.mu.marks) {
		p.mu.marks, p.mu.first = p.mu.marks[:0], 0
	} else if p.mu.first = i; i > maxMarks/2 {
		n := copy(p.mu.marks, p.mu.marks[i:])
		p.mu.marks, p.mu.first = p.mu.marks[:n], 0
	}
	return head, end
}

// write sends ring bytes [head, end) to dst, in two parts when they wrap.
func (p *pipe) write(head, end uint64) error {
	size := uint64(len(p.buf))
	s := head % size
	n := end - head
	if s+n <= size {
		_, err := p.dst.Write(p.buf[s : s+n])
		return err
	}
	if _, err := p.dst.Write(p.buf[s:]); err != nil {
		return err
	}
	_, err := p.dst.Write(p.buf[:n-(size-s)])
	return err
}
