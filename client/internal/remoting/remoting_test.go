package remoting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// fakeServer is a remoting peer built on the protocol package. handle
// gets each request with a function to answer it; it may answer later, out
// of order, or never.
type fakeServer struct {
	t      *testing.T
	ln     net.Listener
	handle func(sc *serverConn, req *protocol.Command)

	mu    sync.Mutex
	conns []*serverConn
	wg    sync.WaitGroup
}

type serverConn struct {
	nc  net.Conn
	wmu sync.Mutex
}

func (sc *serverConn) send(c *protocol.Command) error {
	b, err := protocol.AppendCommand(nil, c)
	if err != nil {
		return err
	}
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	_, err = sc.nc.Write(b)
	return err
}

// echo answers req with code Success, echoing its "k" ext field and body.
func (sc *serverConn) echo(req *protocol.Command) {
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = map[string]string{"k": req.Ext("k")}
	resp.Body = req.Body
	sc.send(resp)
}

func newFakeServer(t *testing.T, handle func(sc *serverConn, req *protocol.Command)) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, handle: handle}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			sc := &serverConn{nc: nc}
			s.mu.Lock()
			s.conns = append(s.conns, sc)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				buf := make([]byte, 64<<10)
				for {
					req, err := protocol.ReadCommand(nc, 0, buf)
					if err != nil {
						return
					}
					s.handle(sc, req)
				}
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

// dropConns closes every accepted connection.
func (s *fakeServer) dropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range s.conns {
		sc.nc.Close()
	}
	s.conns = nil
}

func (s *fakeServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *fakeServer) close() {
	s.ln.Close()
	s.dropConns()
	s.wg.Wait()
}

func newClient(t *testing.T, o Options) *Client {
	c := New(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func request(k string, body []byte) *protocol.Command {
	return protocol.NewRequest(protocol.GetMaxOffset, map[string]string{"k": k}, body)
}

func TestInvokeBothSerializations(t *testing.T) {
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) { sc.echo(req) })
	for _, st := range []protocol.SerializeType{protocol.SerializeRocketMQ, protocol.SerializeJSON} {
		c := newClient(t, Options{Serialize: st})
		resp, err := c.Invoke(context.Background(), s.addr(), request("v", []byte("body")))
		if err != nil {
			t.Fatalf("%v: %v", st, err)
		}
		if resp.Ext("k") != "v" || string(resp.Body) != "body" || resp.Serialize != st {
			t.Fatalf("%v: response %v", st, resp)
		}
	}
}

// TestOutOfOrderResponses: the server holds 50 requests and answers them
// in reverse; each caller must get its own answer.
func TestOutOfOrderResponses(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	var held []*protocol.Command
	var conn *serverConn
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) {
		mu.Lock()
		held = append(held, req)
		conn = sc
		if len(held) < n {
			mu.Unlock()
			return
		}
		all := held
		mu.Unlock()
		for i := len(all) - 1; i >= 0; i-- {
			conn.echo(all[i])
		}
	})
	c := newClient(t, Options{Serialize: protocol.SerializeRocketMQ})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			k := strconv.Itoa(i)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := c.Invoke(ctx, s.addr(), request(k, []byte("b"+k)))
			if err != nil {
				errs <- err
				return
			}
			if resp.Ext("k") != k || string(resp.Body) != "b"+k {
				errs <- fmt.Errorf("request %s got response for %s", k, resp.Ext("k"))
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if a := s.accepted(); a != 1 {
		t.Fatalf("%d connections for one address", a)
	}
}

func TestTimeoutFailsOnlyThatRequest(t *testing.T) {
	var late atomic.Pointer[protocol.Command]
	var lateConn atomic.Pointer[serverConn]
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) {
		if req.Ext("k") == "slow" {
			late.Store(req)
			lateConn.Store(sc)
			return // answered later, after the timeout
		}
		sc.echo(req)
	})
	c := newClient(t, Options{Serialize: protocol.SerializeRocketMQ})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Invoke(ctx, s.addr(), request("slow", nil))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow request: %v", err)
	}
	// Only a sanity bound, orders of magnitude above the 50 ms asked: a
	// broken timeout would leave Invoke waiting for an answer that never comes.
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("timeout took %v", d)
	}
	// The late answer is dropped; the connection keeps serving.
	lateConn.Load().echo(late.Load())
	resp, err := c.Invoke(context.Background(), s.addr(), request("fast", nil))
	if err != nil || resp.Ext("k") != "fast" {
		t.Fatalf("after a timeout: %v %v", resp, err)
	}
	// Cancel (not deadline) gives context.Canceled.
	cctx, ccancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); ccancel() }()
	if _, err := c.Invoke(cctx, s.addr(), request("slow", nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestDefaultTimeoutWithoutDeadline(t *testing.T) {
	s := newFakeServer(t, func(*serverConn, *protocol.Command) {})
	c := newClient(t, Options{Timeout: 30 * time.Millisecond})
	done := make(chan error, 1)
	c.InvokeAsync(context.Background(), s.addr(), request("x", nil), func(_ *protocol.Command, err error) { done <- err })
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no timeout")
	}
}

// TestConnectionLossFailsPending: the server takes requests and drops the
// connection; every pending request fails at once with ErrConnection, and
// the next request reconnects.
func TestConnectionLossFailsPending(t *testing.T) {
	const n = 20
	var got atomic.Int32
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) {
		if req.Ext("k") == "ok" {
			sc.echo(req)
			return
		}
		if got.Add(1) == n {
			sc.nc.Close()
		}
	})
	c := newClient(t, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Invoke(ctx, s.addr(), request("hold", nil))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrConnection) {
			t.Fatalf("pending request ended with %v", err)
		}
	}
	resp, err := c.Invoke(context.Background(), s.addr(), request("ok", nil))
	if err != nil || resp.Ext("k") != "ok" {
		t.Fatalf("after reconnect: %v %v", resp, err)
	}
	if a := s.accepted(); a != 2 {
		t.Fatalf("%d connections accepted, want 2", a)
	}
}

func TestDialFailure(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, Options{})
	if _, err := c.Invoke(context.Background(), addr, request("x", nil)); !errors.Is(err, ErrConnection) {
		t.Fatalf("dial to a closed port: %v", err)
	}
}

func TestOneway(t *testing.T) {
	got := make(chan *protocol.Command, 1)
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) { got <- req })
	c := newClient(t, Options{Serialize: protocol.SerializeRocketMQ})
	body := bytes.Repeat([]byte("z"), bigBody+1)
	if err := c.InvokeOneway(context.Background(), s.addr(), request("one", body)); err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'X' // the caller may reuse the body at once
	}
	select {
	case req := <-got:
		if !req.IsOneway() || req.Ext("k") != "one" || req.Body[0] != 'z' || len(req.Body) != bigBody+1 {
			t.Fatalf("received %v", req)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("one-way request not received")
	}
}

func TestBigBodiesAndPipelining(t *testing.T) {
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) { sc.echo(req) })
	c := newClient(t, Options{Serialize: protocol.SerializeRocketMQ, MaxPending: 1 << 20})
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			size := 10
			if i%3 == 0 {
				size = bigBody + i*100 // by reference, written with writev
			}
			body := bytes.Repeat([]byte{byte(i)}, size)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := c.Invoke(ctx, s.addr(), request(strconv.Itoa(i), body))
			if err != nil || !bytes.Equal(resp.Body, body) || resp.Ext("k") != strconv.Itoa(i) {
				failed.Add(1)
				t.Errorf("request %d: err %v", i, err)
			}
		}(i)
	}
	wg.Wait()
}

// TestServerInitiatedRequests: the peer asks (as a broker sends
// NOTIFY_CONSUMER_IDS_CHANGED one-way, or GET_CONSUMER_RUNNING_INFO with
// an answer); OnRequest serves it and the answer comes back.
func TestServerInitiatedRequests(t *testing.T) {
	answers := make(chan *protocol.Command, 4)
	var sc0 atomic.Pointer[serverConn]
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) {
		if req.IsResponse() {
			answers <- req
			return
		}
		sc0.Store(sc)
		sc.echo(req)
	})
	notified := make(chan string, 1)
	c := newClient(t, Options{OnRequest: func(addr string, req *protocol.Command) *protocol.Command {
		switch req.Code {
		case protocol.NotifyConsumerIdsChanged:
			notified <- req.Ext("consumerGroup")
			return nil
		case protocol.GetConsumerRunningInfo:
			r := protocol.NewResponse(req, protocol.Success, "")
			r.Body = []byte("running")
			return r
		}
		return nil
	}})
	if _, err := c.Invoke(context.Background(), s.addr(), request("hello", nil)); err != nil {
		t.Fatal(err)
	}
	sc := sc0.Load()
	n := protocol.NewRequest(protocol.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": "g1"}, nil)
	n.MarkOneway()
	n.Opaque = 900
	sc.send(n)
	select {
	case g := <-notified:
		if g != "g1" {
			t.Fatalf("notified for %q", g)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notification")
	}
	r := protocol.NewRequest(protocol.GetConsumerRunningInfo, nil, nil)
	r.Opaque = 901
	sc.send(r)
	u := protocol.NewRequest(protocol.ResetConsumerClientOffset, nil, nil)
	u.Opaque = 902
	sc.send(u)
	seen := map[int32]*protocol.Command{}
	for len(seen) < 2 {
		select {
		case a := <-answers:
			seen[a.Opaque] = a
		case <-time.After(30 * time.Second):
			t.Fatalf("answers: %v", seen)
		}
	}
	if a := seen[901]; a.Code != protocol.Success || string(a.Body) != "running" {
		t.Fatalf("running info answer %v", a)
	}
	if a := seen[902]; a.Code != protocol.RequestCodeNotSupported {
		t.Fatalf("unknown request answered %v", a)
	}
}

func TestCloseFailsPending(t *testing.T) {
	s := newFakeServer(t, func(*serverConn, *protocol.Command) {})
	c := New(Options{})
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.InvokeAsync(ctx, s.addr(), request("x", nil), func(_ *protocol.Command, err error) { done <- err })
	for len(c.Addrs()) == 0 {
		time.Sleep(time.Millisecond)
	}
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending after close: %v", err)
	}
	if _, err := c.Invoke(ctx, s.addr(), request("y", nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("invoke after close: %v", err)
	}
}

func BenchmarkInvoke(b *testing.B) {
	s := newFakeServer(&testing.T{}, func(sc *serverConn, req *protocol.Command) { sc.echo(req) })
	defer s.close()
	c := New(Options{Serialize: protocol.SerializeRocketMQ})
	defer c.Close()
	body := make([]byte, 256)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Invoke(context.Background(), s.addr(), request("k", body)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A request made with a deadline fails with ErrTimeout once the sweeper
// sees it past its deadline; the others on the connection are answered,
// and the late answer is dropped.
func TestInvokeAsyncDeadline(t *testing.T) {
	var late atomic.Pointer[protocol.Command]
	var lateConn atomic.Pointer[serverConn]
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) {
		if req.Ext("k") == "slow" {
			late.Store(req)
			lateConn.Store(sc)
			return
		}
		sc.echo(req)
	})
	c := newClient(t, Options{Serialize: protocol.SerializeRocketMQ, SweepInterval: 5 * time.Millisecond})
	type result struct {
		resp *protocol.Command
		err  error
		at   time.Time
	}
	slow, fast := make(chan result, 1), make(chan result, 1)
	start := time.Now()
	c.InvokeAsyncDeadline(s.addr(), request("slow", nil), start.Add(40*time.Millisecond), func(r *protocol.Command, err error) {
		slow <- result{r, err, time.Now()}
	})
	c.InvokeAsyncDeadline(s.addr(), request("fast", nil), start.Add(10*time.Second), func(r *protocol.Command, err error) {
		fast <- result{r, err, time.Now()}
	})
	if r := <-fast; r.err != nil || r.resp.Ext("k") != "fast" {
		t.Fatalf("fast: %v %v", r.resp, r.err)
	}
	r := <-slow
	if !errors.Is(r.err, ErrTimeout) || !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v", r.err)
	}
	// Not before the deadline; the upper bound is only a sanity check,
	// orders of magnitude above the 40 ms asked.
	if d := r.at.Sub(start); d < 40*time.Millisecond || d > time.Minute {
		t.Fatalf("timed out after %v", d)
	}
	lateConn.Load().echo(late.Load())
	resp, err := c.Invoke(context.Background(), s.addr(), request("after", nil))
	if err != nil || resp.Ext("k") != "after" {
		t.Fatalf("after a timeout: %v %v", resp, err)
	}
}

// TestIdleCloseRedials: a connection with nothing sent for IdleClose is
// closed by the client (before a server's idle timeout would cut it), and
// the next request dials a fresh one; a connection in use is kept.
func TestIdleCloseRedials(t *testing.T) {
	s := newFakeServer(t, func(sc *serverConn, req *protocol.Command) { sc.echo(req) })
	c := newClient(t, Options{IdleClose: time.Second})
	call := func(k string) {
		t.Helper()
		resp, err := c.Invoke(context.Background(), s.addr(), request(k, nil))
		if err != nil || resp.Ext("k") != k {
			t.Fatalf("%s: %v %v", k, resp, err)
		}
	}
	for i := 0; i < 40; i++ { // a request every 50 ms for 2 s: in use
		call("busy")
		time.Sleep(50 * time.Millisecond)
	}
	if a := s.accepted(); a != 1 {
		t.Fatalf("%d connections accepted while in use, want 1", a)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(c.Addrs()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle connection was not closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	call("after")
	if a := s.accepted(); a != 2 {
		t.Fatalf("%d connections accepted, want 2", a)
	}
}
