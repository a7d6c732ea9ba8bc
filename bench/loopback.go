package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// LoopbackOptions configure RunLoopback.
type LoopbackOptions struct {
	// Conns is how many TCP connections carry the bytes at once; default 1.
	Conns int `json:"conns"`
	// Chunk is the bytes of each write on the sending side; default 64 KiB.
	Chunk int `json:"chunk"`
	// Bytes is what all connections carry together; default 1 GiB.
	Bytes int64 `json:"bytes"`
}

// EnsureDefaults fills zero fields with their defaults.
func (o *LoopbackOptions) EnsureDefaults() {
	if o.Conns == 0 {
		o.Conns = 1
	}
	if o.Chunk == 0 {
		o.Chunk = 64 << 10
	}
	if o.Bytes == 0 {
		o.Bytes = 1 << 30
	}
}

// Validate reports options RunLoopback cannot run.
func (o *LoopbackOptions) Validate() error {
	if o.Conns < 1 || o.Conns > 256 {
		return fmt.Errorf("conns %d: want 1 to 256", o.Conns)
	}
	if o.Chunk < 1 || o.Chunk > 16<<20 {
		return fmt.Errorf("chunk %d: want 1 B to 16 MiB", o.Chunk)
	}
	if o.Bytes < int64(o.Conns) {
		return fmt.Errorf("bytes %d: want at least one a connection", o.Bytes)
	}
	return nil
}

// LoopbackResult is a RunLoopback run.
type LoopbackResult struct {
	Kind    string          `json:"kind"` // "loopback"
	Options LoopbackOptions `json:"options"`
	Start   time.Time       `json:"start"`
	Bytes   int64           `json:"bytes"`
	// MeasuredSeconds runs from the first connection's dial to the last
	// byte read.
	MeasuredSeconds float64 `json:"measured_seconds"`
	MBPerSec        float64 `json:"mb_per_sec"` // 10^6 bytes per second
}

// RunLoopback moves Bytes over Conns TCP connections on 127.0.0.1 inside
// this process, and nothing else: each sender writes Chunk-byte buffers,
// each receiver reads into a 256 KiB buffer and drops the bytes. It is the
// ceiling of anything that hands bytes from one process to another over
// loopback TCP on this machine (a pull consumer draining a backlog pays
// this and more: the broker's read of the log, both ends' framing and the
// consumer's decoding), the way RunDiskRead is the disk's.
func RunLoopback(ctx context.Context, opts LoopbackOptions) (*LoopbackResult, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("bench: loopback options: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: loopback: %w", err)
	}
	defer func() { _ = ln.Close() }() // a listener of our own: nothing to keep
	per := opts.Bytes / int64(opts.Conns)
	res := &LoopbackResult{Kind: "loopback", Options: opts, Start: time.Now().UTC()}

	var wg sync.WaitGroup
	errs := make(chan error, 2*opts.Conns)
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		if ctx.Err() != nil { // cancelled before the AfterFunc below could see it
			_ = c.Close()
		}
	}
	closeAll := func() { // unblocks every read and write
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	stop := context.AfterFunc(ctx, closeAll) // a cancelled run
	defer stop()
	wg.Add(1)
	go func() { // the senders
		defer wg.Done()
		for i := 0; i < opts.Conns; i++ {
			c, err := ln.Accept()
			if err != nil {
				errs <- fmt.Errorf("accept: %w", err)
				closeAll() // the dialled ends would wait for bytes forever
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = c.Close() }() // the receiver has read what it needs or failed
				buf := make([]byte, opts.Chunk)
				for left := per; left > 0 && ctx.Err() == nil; {
					n := int(min(left, int64(len(buf))))
					if _, err := c.Write(buf[:n]); err != nil {
						errs <- fmt.Errorf("write: %w", err)
						return
					}
					left -= int64(n)
				}
			}()
		}
	}()
	start := time.Now()
	var got sync.WaitGroup
	var total int64
	for i := 0; i < opts.Conns; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			_ = ln.Close()
			stop()
			wg.Wait()
			return nil, fmt.Errorf("bench: loopback: dial: %w", err)
		}
		track(c)
		got.Add(1)
		go func() {
			defer got.Done()
			defer func() { _ = c.Close() }() // read-only use
			buf := make([]byte, 256<<10)
			n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, buf)
			mu.Lock()
			total += n
			mu.Unlock()
			if err == nil && n < per {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				errs <- fmt.Errorf("read: %w", err)
			}
		}()
	}
	got.Wait()
	el := time.Since(start)
	wg.Wait()
	close(errs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return nil, fmt.Errorf("bench: loopback: %w", err)
	}
	res.Bytes = total
	res.MeasuredSeconds = el.Seconds()
	res.MBPerSec = float64(total) / 1e6 / el.Seconds()
	return res, nil
}

// WriteJSON writes the run as indented JSON (the --json flag).
func (r *LoopbackResult) WriteJSON(path string) error { return writeJSON(path, r) }
