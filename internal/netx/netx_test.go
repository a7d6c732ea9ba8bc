package netx

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/netx/netxtest"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitClosed waits (up to 30 s) for the server to close nc.
func waitClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, nc); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
}

// TestListenerCaps: the connection over the per-address cap is closed at
// once, logged and counted; closing one frees its place.
func TestListenerCaps(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	ln := NewListener(raw, Limits{MaxConns: 10, MaxPerAddr: 2}, slog.New(slog.NewTextHandler(&logs, nil)), "test")
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	a1, a2 := <-accepted, <-accepted
	waitClosed(t, clients[2])
	if ln.Refused() != 1 || !strings.Contains(logs.String(), "over maxConnectionsPerAddress") {
		t.Fatalf("refused %d, log %q", ln.Refused(), logs.String())
	}
	a1.Close()
	a1.Close() // frees its place once
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case a3 := <-accepted:
		a3.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("a connection after one closed was not accepted")
	}
	a2.Close()
	if n := ln.Open(); n != 0 {
		t.Fatalf("open %d after closing all", n)
	}
}

// pipeServer accepts one connection and reads 4-byte-length frames
// through Deadlines until an error, which it returns.
func pipeServer(t *testing.T, idle, frame time.Duration, busy func() bool) (string, <-chan error) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	out := make(chan error, 1)
	go func() {
		nc, err := raw.Accept()
		if err != nil {
			out <- err
			return
		}
		defer nc.Close()
		d := &Deadlines{Conn: nc, R: nc, Idle: idle, Frame: frame, Busy: busy}
		br := bufio.NewReaderSize(d, 64)
		for {
			var hdr [4]byte
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				out <- err
				return
			}
			n := int(hdr[0])
			if _, err := io.ReadFull(br, make([]byte, n)); err != nil {
				out <- err
				return
			}
			d.Boundary(br.Buffered())
		}
	}()
	return raw.Addr().String(), out
}

func TestDeadlinesFrameTimeout(t *testing.T) {
	addr, out := pipeServer(t, time.Hour, 200*time.Millisecond, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{10, 0, 0, 0, 1, 2}) // a 10-byte frame, 2 bytes sent
	select {
	case err := <-out:
		if !errors.Is(err, ErrFrameTimeout) {
			t.Fatalf("got %v, want ErrFrameTimeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a stalled frame was not timed out")
	}
}

// TestDeadlinesIdle: a silent connection times out; a busy one does not
// until it is no longer busy; frames trickling in keep it open.
func TestDeadlinesIdle(t *testing.T) {
	var mu sync.Mutex
	busy := false
	addr, out := pipeServer(t, time.Second, time.Hour, func() bool { mu.Lock(); defer mu.Unlock(); return busy })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 40; i++ { // a frame every 50 ms for 2 s: never idle
		c.Write([]byte{1, 0, 0, 0, 9})
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	busy = true
	mu.Unlock()
	time.Sleep(2500 * time.Millisecond) // busy: not idle
	select {
	case err := <-out:
		t.Fatalf("closed while busy: %v", err)
	default:
	}
	mu.Lock()
	busy = false
	mu.Unlock()
	select {
	case err := <-out:
		if !errors.Is(err, ErrIdle) {
			t.Fatalf("got %v, want ErrIdle", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an idle connection was not timed out")
	}
}

// TestPermissive: one port answers a TLS client and a plain one; an
// enforcing server fails a plain client's bytes as a handshake.
func TestPermissive(t *testing.T) {
	certs := netxtest.New(t)
	for _, mode := range []string{TLSPermissive, TLSEnforcing} {
		srv, err := NewTLSServer(TLSServerOptions{Mode: mode, CertFile: certs.ServerCertFile, KeyFile: certs.ServerKey})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		go func() {
			for {
				nc, err := raw.Accept()
				if err != nil {
					return
				}
				go func() {
					defer nc.Close()
					c, _, err := srv.Server(nc, 30*time.Second, nil)
					if err != nil {
						return
					}
					line, err := bufio.NewReader(c).ReadString('\n')
					if err == nil {
						io.WriteString(c, "echo "+line)
					}
				}()
			}
		}()
		roundTrip := func(nc net.Conn) (string, error) {
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(nc, "hello\n"); err != nil {
				return "", err
			}
			return bufio.NewReader(nc).ReadString('\n')
		}
		tc, err := tls.Dial("tcp", raw.Addr().String(), certs.ClientConfig(t, false))
		if err != nil {
			t.Fatalf("%s: TLS dial: %v", mode, err)
		}
		if got, err := roundTrip(tc); got != "echo hello\n" {
			t.Fatalf("%s: TLS got %q, %v", mode, got, err)
		}
		pc, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := roundTrip(pc)
		if mode == TLSPermissive && got != "echo hello\n" {
			t.Fatalf("permissive: plain got %q, %v", got, err)
		}
		if mode == TLSEnforcing && got == "echo hello\n" {
			t.Fatal("enforcing: a plain client was answered")
		}
	}
}

// flakyListener fails Accept with EMFILE fails times, then accepts.
type flakyListener struct {
	net.Listener
	fails int
}

func (f *flakyListener) Accept() (net.Conn, error) {
	if f.fails > 0 {
		f.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return f.Listener.Accept()
}

// TestAcceptBacksOff: accept errors such as EMFILE are logged and waited
// out; Accept returns the next connection, not the error.
func TestAcceptBacksOff(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	ln := NewListener(&flakyListener{Listener: raw, fails: 3}, Limits{}, slog.New(slog.NewTextHandler(&logs, nil)), "test")
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatalf("Accept returned %v", err)
	}
	a.Close()
	if n := strings.Count(logs.String(), "accept failed"); n != 3 {
		t.Fatalf("%d accept failures logged, want 3:\n%s", n, logs.String())
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}
