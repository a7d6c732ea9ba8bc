package linkdelay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer runs Echo on a loopback port until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { Echo(ln); close(done) }()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func startProxy(t *testing.T, target string, oneWay time.Duration, ring int) *Proxy {
	t.Helper()
	p, err := newProxy("127.0.0.1:0", target, oneWay, ring)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// TestProxyRoundTripAtLeastTwiceOneWay: every byte waits oneWay each way,
// so no round trip through the proxy is shorter than 2×oneWay (a lower
// bound only: a busy machine makes them longer, never shorter).
func TestProxyRoundTripAtLeastTwiceOneWay(t *testing.T) {
	target := echoServer(t)
	for _, oneWay := range []time.Duration{0, 500 * time.Microsecond, 3 * time.Millisecond} {
		p := startProxy(t, target, oneWay, DefaultRing)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rtts, err := Ping(ctx, p.Addr(), 40)
		cancel()
		require.NoError(t, err)
		require.Len(t, rtts, 40)
		for i, rtt := range rtts {
			require.GreaterOrEqual(t, rtt, 2*oneWay, "ping %d through a %v proxy", i, oneWay)
		}
		t.Logf("one-way %v: median round trip %v", oneWay, Median(rtts))
	}
}

// TestProxyStreamsIntact sends a large random stream each way at once,
// in random write sizes, through rings small and odd enough to wrap many
// times, and checks both arrive whole and in order, each ended by the
// sender's half-close passed on by the proxy.
func TestProxyStreamsIntact(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, tc := range []struct {
		ring   int
		oneWay time.Duration
		size   int
	}{{65537, time.Millisecond, 8 << 20}, {DefaultRing, 200 * time.Microsecond, 16 << 20}} {
		t.Run("ring="+strconv.Itoa(tc.ring), func(t *testing.T) {
			up, down := randomBytes(seed, tc.size), randomBytes(seed+1, tc.size+12345)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			serverGot := make(chan []byte, 1)
			serverErr := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					serverErr <- err
					return
				}
				defer c.Close()
				got, err := exchange(c.(*net.TCPConn), down, seed+2)
				serverGot <- got
				serverErr <- err
			}()
			p := startProxy(t, ln.Addr().String(), tc.oneWay, tc.ring)
			c, err := net.Dial("tcp", p.Addr())
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(60*time.Second)))
			got, err := exchange(c.(*net.TCPConn), up, seed+3)
			require.NoError(t, err)
			require.NoError(t, <-serverErr)
			require.Equal(t, sha256.Sum256(down), sha256.Sum256(got), "master→client stream (%d of %d bytes)", len(got), len(down))
			sg := <-serverGot
			require.Equal(t, sha256.Sum256(up), sha256.Sum256(sg), "client→server stream (%d of %d bytes)", len(sg), len(up))
		})
	}
}

func randomBytes(seed uint64, n int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

// exchange writes out in random pieces and half-closes, while reading
// everything until EOF; it returns what it read.
func exchange(c *net.TCPConn, out []byte, seed uint64) ([]byte, error) {
	werr := make(chan error, 1)
	go func() {
		r := rand.New(rand.NewPCG(seed, 9))
		for rest := out; len(rest) > 0; {
			n := min(len(rest), 1+r.IntN(200_000))
			if _, err := c.Write(rest[:n]); err != nil {
				werr <- err
				return
			}
			rest = rest[n:]
		}
		werr <- c.CloseWrite()
	}()
	var got bytes.Buffer
	_, rerr := io.Copy(&got, c)
	return got.Bytes(), errors.Join(rerr, <-werr)
}

// TestProxyBackPressure: with a receiver that does not read, a sender
// gets no further than the sockets' buffers plus the proxy's ring before
// its writes block; once the receiver reads, everything written arrives.
func TestProxyBackPressure(t *testing.T) {
	const ring = 64 << 10
	bound := int64(ring) + 2*(sysctlMax(t, "tcp_wmem")+sysctlMax(t, "tcp_rmem"))
	limit := 2*bound + 16<<20
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	p := startProxy(t, ln.Addr().String(), 100*time.Microsecond, ring)
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	server := <-accepted
	defer server.Close()

	// The writer stops at the first error: the deadline, when back-pressure
	// holds it (a slow machine only writes less).
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(2*time.Second)))
	chunk := make([]byte, 1<<20)
	var written int64
	var werr error
	for written < limit && werr == nil {
		var n int
		n, werr = c.Write(chunk)
		written += int64(n)
	}
	require.ErrorIs(t, werr, os.ErrDeadlineExceeded, "wrote %d bytes to a receiver that does not read", written)
	require.LessOrEqual(t, written, bound, "buffered beyond the sockets and the ring")

	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	require.NoError(t, server.SetReadDeadline(time.Now().Add(30*time.Second)))
	n, err := io.Copy(io.Discard, server)
	require.NoError(t, err)
	require.Equal(t, written, n, "bytes through after the receiver started reading")
	t.Logf("held back after %d bytes (bound %d)", written, bound)
}

// sysctlMax is the last (largest) value of net.ipv4.<name>.
func sysctlMax(t *testing.T, name string) int64 {
	b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
	if err != nil {
		t.Skipf("no socket buffer limits to bound by: %v", err)
	}
	f := strings.Fields(string(b))
	v, err := strconv.ParseInt(f[len(f)-1], 10, 64)
	require.NoError(t, err)
	return v
}

// TestProxyClose: Close tears down a connection with data still delayed
// in it, stops accepting, waits for its goroutines, and is idempotent; a
// target that refuses ends the client's connection instead of hanging.
func TestProxyClose(t *testing.T) {
	target := echoServer(t)
	p, err := NewProxy("127.0.0.1:0", target, time.Hour)
	require.NoError(t, err)
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("never delivered"))
	require.NoError(t, err)
	waitConns(t, p, 1)

	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	n, err := c.Read(make([]byte, 64))
	require.Zero(t, n)
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the client's connection outlived Close")
	p.mu.Lock()
	require.Empty(t, p.mu.conns)
	p.mu.Unlock()
	_, err = net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	require.Error(t, err, "dialled a closed proxy")

	// A target nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := ln.Addr().String()
	ln.Close()
	q := startProxy(t, gone, time.Millisecond, DefaultRing)
	c2, err := net.Dial("tcp", q.Addr())
	require.NoError(t, err)
	defer c2.Close()
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c2.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "a refused target left the client hanging")
}

// waitConns waits (10 s at most) until p serves n connections.
func waitConns(t *testing.T, p *Proxy, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		got := len(p.mu.conns)
		p.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("the proxy does not serve %d connections", n)
}

// TestProxyManyConnections: connections are independent; each one's
// pings all take their 2×oneWay.
func TestProxyManyConnections(t *testing.T) {
	p := startProxy(t, echoServer(t), time.Millisecond, DefaultRing)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rtts, err := Ping(ctx, p.Addr(), 20)
			for _, r := range rtts {
				if r < 2*time.Millisecond {
					err = errors.Join(err, errors.New("a round trip under 2×oneWay: "+r.String()))
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
