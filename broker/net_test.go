package broker

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// logBuf collects a broker's log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// waitServerClose waits (up to 30 s) for the broker to close nc.
func waitServerClose(t *testing.T, nc net.Conn, what string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, nc); err != nil {
		t.Fatalf("%s: the broker did not close the connection: %v", what, err)
	}
}

func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TestAnnouncedFrameCostsWhatArrived: 64 connections each announce a
// 16 MiB frame and send 1000 bytes of it. The broker allocated the
// declared length up front (1 GiB for the lot); now a frame's buffer
// follows what arrived, so the whole run allocates far under 64 MiB.
func TestAnnouncedFrameCostsWhatArrived(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	const conns, sent = 64, 1000
	msg := make([]byte, 4+sent)
	binary.BigEndian.PutUint32(msg, 16<<20-1)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ncs := make([]net.Conn, conns)
	for i := range ncs {
		ncs[i] = dialTCP(t, b.Addr())
		if _, err := ncs[i].Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return b.stats.bytesRead.Load() >= conns*int64(len(msg)) }, "the broker to read every byte sent")
	for _, nc := range ncs {
		nc.Close()
	}
	// Each reader has given up on its frame once it counts a bad frame
	// (cut short): whatever it allocated for it, it has.
	waitFor(t, func() bool { return b.stats.badFrames.Load() >= conns }, "every connection's frame to fail")
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Fatalf("%d connections announcing 16 MiB frames and sending %d bytes each cost %d MiB of allocation", conns, sent, grown>>20)
	} else {
		t.Logf("allocated %.1f MiB for %d connections", float64(grown)/(1<<20), conns)
	}
}

// TestStalledFrameClosed: a frame begun and not finished within
// frameReadTimeoutMillis closes its connection, logged and counted.
func TestStalledFrameClosed(t *testing.T) {
	var logs logBuf
	b := startBroker(t, "", func(c *Config) {
		c.FrameReadTimeout = 200 * time.Millisecond
		c.Logger = logs.logger()
	})
	defer b.Close()
	nc := dialTCP(t, b.Addr())
	msg := make([]byte, 4+10)
	binary.BigEndian.PutUint32(msg, 100)
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	waitServerClose(t, nc, "a stalled frame")
	waitFor(t, func() bool { return b.stats.frameTimeouts.Load() == 1 }, "frame_timeouts 1")
	if !strings.Contains(logs.String(), "frame stalled") {
		t.Fatalf("no log line for the stalled frame:\n%s", logs.String())
	}
}

// TestIdleConnectionClosed: a silent connection is closed after
// serverChannelMaxIdleTimeSeconds; one that keeps sending requests is
// not, nor one whose pull the broker holds for longer than that.
func TestIdleConnectionClosed(t *testing.T) {
	var logs logBuf
	b := startBroker(t, "", func(c *Config) {
		c.ServerChannelMaxIdle = time.Second
		c.Logger = logs.logger()
	})
	defer b.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	idle := dialTCP(t, b.Addr())
	active := dialRaw(t, b.Addr())
	if r := active.call(createTopicReq("idle", 1)); r.Code != protocol.Success {
		t.Fatalf("create topic: %v", r)
	}
	idleClosed := make(chan struct{})
	go func() {
		defer close(idleClosed)
		_ = idle.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, _ = io.Copy(io.Discard, idle)
	}()
	// Requests every 50 ms, at least 60 (three idle periods) and until
	// the silent connection is closed: the active one never is.
	for i := 0; ; i++ {
		active.call(protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
		if i >= 60 {
			select {
			case <-idleClosed:
			default:
				time.Sleep(50 * time.Millisecond)
				continue
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, func() bool { return b.stats.idleCloses.Load() >= 1 }, "idle_closes 1")
	if !strings.Contains(logs.String(), "closing an idle connection") {
		t.Fatalf("no log line for the idle connection:\n%s", logs.String())
	}
	// A pull held 2.5 s (two and a half idle periods): the connection
	// is busy.
	r := active.call(pullReq("g", "idle", 0, 0, 32, 2500*time.Millisecond, "*"))
	if r.Code != protocol.PullNotFound && r.Code != protocol.PullOffsetMoved {
		t.Fatalf("held pull answered %v", r)
	}
	active.call(protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	if n := b.stats.idleCloses.Load(); n != 1 {
		t.Fatalf("idle_closes %d: an active connection was closed", n)
	}
}

// TestConnectionCaps: with maxConnections 4, the fifth connection is
// closed at once with a log line and counted, while a client connected
// before keeps sending.
func TestConnectionCaps(t *testing.T) {
	var logs logBuf
	b := startBroker(t, "", func(c *Config) {
		c.MaxConnections = 4
		c.Logger = logs.logger()
	})
	defer b.Close()
	producer := dialRaw(t, b.Addr())
	send := func(i int) {
		t.Helper()
		if r := producer.call(sendReq("caps", 0, []byte{byte(i)}, nil)); r.Code != protocol.Success {
			t.Fatalf("send %d: %v", i, r)
		}
	}
	send(0)
	for i := 0; i < 3; i++ {
		dialRaw(t, b.Addr()).call(protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil)) // accepted and served
	}
	over := dialTCP(t, b.Addr())
	waitServerClose(t, over, "the connection over maxConnections")
	if n := b.refusedConns(); n != 1 {
		t.Fatalf("refused %d, want 1", n)
	}
	if !strings.Contains(logs.String(), "connection refused: over maxConnections") {
		t.Fatalf("no log line for the refusal:\n%s", logs.String())
	}
	var stats bytes.Buffer
	writeStatsTo(&stats, b, "")
	if !strings.Contains(stats.String(), "STAT refused_connections 1") {
		t.Fatalf("stats:\n%s", stats.String())
	}
	for i := 1; i <= 10; i++ {
		send(i)
	}
}
