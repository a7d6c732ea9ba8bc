//go:build linux

package netx

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteMoreThenSendFile: buffers written with MSG_MORE (more than the
// socket takes at once, so the writes wait for room and resume mid-buffer)
// followed by a file piece by sendfile arrive whole and in order.
func TestWriteMoreThenSendFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	var bufs [][]byte
	for i, n := range []int{7, 0, 3 << 20, 1, 64 << 10} {
		b := bytes.Repeat([]byte{byte('a' + i)}, n)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	n, err := WriteMore(c.(syscall.Conn), bufs)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("WriteMore: %d of %d bytes, %v", n, len(want), err)
	}
	body := bytes.Repeat([]byte("file"), 1<<14)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := SendFile(c.(syscall.Conn), int(f.Fd()), 4, len(body)-4); err != nil {
		t.Fatal(err)
	}
	want = append(want, body[4:]...)
	c.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("received %d bytes, want %d (or different bytes)", len(b), len(want))
	}
}

// TestConsume: consume drops exactly n bytes across buffers.
func TestConsume(t *testing.T) {
	bufs := [][]byte{[]byte("ab"), []byte("cde"), nil, []byte("f")}
	bufs = consume(bufs, 3)
	if len(bufs) != 3 || string(bufs[0]) != "de" {
		t.Fatalf("after 3: %q", bufs)
	}
	bufs = consume(bufs, 2)
	if len(bufs) != 1 || string(bufs[0]) != "f" {
		t.Fatalf("after 5: %q", bufs)
	}
	if bufs = consume(bufs, 1); len(bufs) != 0 {
		t.Fatalf("after 6: %q", bufs)
	}
}
