package namesrv

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// waitClosedLong waits (up to 30 s) for the server to close nc.
func waitClosedLong(t *testing.T, nc net.Conn, what string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, nc); err != nil {
		t.Fatalf("%s: not closed: %v", what, err)
	}
}

// TestConnectionBounds: a silent connection is closed after IdleTimeout,
// a stalled frame after FrameTimeout, and the connection over
// MaxConnsPerAddr at once; a client that keeps asking is served.
func TestConnectionBounds(t *testing.T) {
	srv := startServer(t, Options{IdleTimeout: time.Second, FrameTimeout: 200 * time.Millisecond, MaxConnsPerAddr: 3})
	active := dial(t, srv.Addr())
	silent := dial(t, srv.Addr())
	stalled := dial(t, srv.Addr())
	partial := make([]byte, 4+10)
	binary.BigEndian.PutUint32(partial, 100)
	if _, err := stalled.nc.Write(partial); err != nil {
		t.Fatal(err)
	}
	over := dial(t, srv.Addr())
	waitClosedLong(t, over.nc, "the connection over MaxConnsPerAddr")
	if n := srv.Refused(); n != 1 {
		t.Fatalf("refused %d, want 1", n)
	}
	waitClosedLong(t, stalled.nc, "a stalled frame")
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = silent.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, _ = io.Copy(io.Discard, silent.nc)
	}()
	// A request every 50 ms, at least 2 s and until the silent one is
	// closed: the active connection stays.
	for i := 0; ; i++ {
		active.mustRoundTrip(protocol.GetAllTopicListFromNameServer, nil, nil)
		if i >= 40 {
			select {
			case <-closed:
				return
			default:
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
