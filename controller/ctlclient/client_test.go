package ctlclient

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/samsamq/samsa/controller"
)

func TestNewRefusesBadOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("no address accepted")
	}
	if _, err := New(Options{Addrs: []string{"127.0.0.1:1", " "}}); err == nil {
		t.Fatal("an empty address accepted")
	}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// With no controller reachable a call ends, with an error naming the last
// failure, when its attempts are spent or its ctx ends.
func TestNoControllerEnds(t *testing.T) {
	c, err := New(Options{Addrs: []string{deadAddr(t), deadAddr(t)}, RetryPause: time.Millisecond, MaxAttempts: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = c.Heartbeat(ctx, controller.Heartbeat{Group: controller.Group{Cluster: "c", Broker: "b"}})
	if err == nil {
		t.Fatal("a heartbeat with no controller succeeded")
	}
	c2, _ := New(Options{Addrs: []string{deadAddr(t)}, RetryPause: time.Hour})
	defer c2.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := c2.RegisterBroker(ctx2, controller.RegisterBroker{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx end: %v", err)
	}
	c2.Close()
	if _, _, err := c2.Show(context.Background(), controller.Group{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A silent server (accepts, never answers): the call ends with its ctx.
func TestSilentServerEndsWithCtx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
		}
	}()
	c, _ := New(Options{Addrs: []string{ln.Addr().String()}, RetryPause: time.Hour})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.AlterSyncStateSet(ctx, controller.AlterSyncStateSet{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("silent server: %v", err)
	}
}
