package linkdelay

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// Echo answers every connection ln accepts with what it reads, until ln
// is closed; then it closes the connections it still serves and returns
// once their goroutines have.
func Echo(ln net.Listener) {
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	var wg sync.WaitGroup
	defer func() {
		mu.Lock()
		for c := range conns {
			_ = c.Close() // ends its copy; an echo has nothing to flush
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			_, _ = io.Copy(c, c)
			_ = c.Close() // the copy ended: the peer closed, or Echo is closing
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		})
	}
}

// Ping connects to addr (an echo: Echo or anything that answers bytes
// with the same bytes) and measures n round trips of an 8-byte message,
// one at a time. The connection's handshake is not counted. ctx bounds
// the whole call.
func Ping(ctx context.Context, addr string, n int) ([]time.Duration, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }() // every round trip was read back, or failed and is returned
	// SetDeadline fails only on a closed connection, whose read fails anyway.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	rtts := make([]time.Duration, 0, n)
	var out, in [8]byte
	for i := range n {
		binary.LittleEndian.PutUint64(out[:], uint64(i))
		t0 := time.Now()
		if _, err := c.Write(out[:]); err != nil {
			return rtts, fmt.Errorf("ping %d: %w", i, err)
		}
		if _, err := io.ReadFull(c, in[:]); err != nil {
			return rtts, fmt.Errorf("ping %d: %w", i, err)
		}
		rtts = append(rtts, time.Since(t0))
		if in != out {
			return rtts, fmt.Errorf("ping %d: echo %x, sent %x", i, in, out)
		}
	}
	return rtts, nil
}

// Median is the middle of ds (the lower middle for an even count), or 0
// for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
