package chaos

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer echoes every connection and counts the ones that ended.
func echoServer(t *testing.T) (addr string, ended *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ended = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = io.Copy(c, c)
				c.Close()
				ended.Add(1)
			}()
		}
	}()
	return ln.Addr().String(), ended
}

func roundTrip(c net.Conn, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPartitionCutAndHeal(t *testing.T) {
	target, ended := echoServer(t)
	p, err := NewPartition("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got, err := roundTrip(a, "hello", 20*time.Second); err != nil || got != "hello" {
		t.Fatalf("before the cut: %q %v", got, err)
	}
	p.Cut()
	// Nothing crosses, nothing is closed: the read times out.
	if got, err := roundTrip(a, "lost", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("across the cut: %q %v", got, err)
	}
	// A new connection is accepted and held.
	b, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := roundTrip(b, "held", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection across the cut: %q %v", got, err)
	}
	// The client giving up is not seen across the cut.
	a.Close()
	time.Sleep(50 * time.Millisecond)
	if n := ended.Load(); n != 0 {
		t.Fatalf("the server saw %d connections end across the cut", n)
	}
	p.Heal()
	waitFor(t, "the caught connection closed at the server", func() bool { return ended.Load() == 1 })
	_ = b.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := b.Read(make([]byte, 1)); err == nil {
		t.Fatal("a held connection survived the heal")
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "again", 20*time.Second); err != nil || got != "again" {
		t.Fatalf("after the heal: %q %v", got, err)
	}
}

// TestCutFromOwner: a cut of one process's connections (this test's own,
// found through /proc) holds them and lets others' through; Heal closes
// what it held.
func TestCutFromOwner(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp:", err)
	}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	p, err := NewPartition("127.0.0.1:0", echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var errs atomic.Int64
	other := ownedBy(os.Getpid()+1<<22, &errs) // no such process: matches nothing
	p.CutFrom(other)
	c1, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	ownerTrip(t, c1, "a", true)
	p.Heal()
	errs.Store(0)
	p.CutFrom(ownedBy(os.Getpid(), &errs))
	ownerTrip(t, c1, "b", false) // ours: held
	if n := errs.Load(); n != 0 {
		t.Fatalf("%d lookup failures", n)
	}
}

// ownerTrip writes s on c and expects it back (want) or nothing within a
// second (!want).
func ownerTrip(t *testing.T, c net.Conn, s string, want bool) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	wait := 30 * time.Second
	if !want {
		wait = time.Second
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, len(s))
	_, err := io.ReadFull(c, buf)
	if want && (err != nil || string(buf) != s) {
		t.Fatalf("round trip %q: %q, %v", s, buf, err)
	}
	if !want && err == nil {
		t.Fatalf("round trip %q crossed a cut", s)
	}
}
