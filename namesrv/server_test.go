package namesrv

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// testLogger discards below warnings unless -v.
func testLogger(t *testing.T) *slog.Logger {
	lv := slog.LevelWarn
	if testing.Verbose() {
		lv = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: lv}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	o.Listen = "127.0.0.1:0"
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// client is a minimal remoting client over our protocol package.
type client struct {
	t      *testing.T
	nc     net.Conn
	br     *bufio.Reader
	opaque int32
	st     protocol.SerializeType
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *client) roundTrip(code int32, ext map[string]string, body []byte) (*protocol.Command, error) {
	c.opaque++
	req := protocol.NewRequest(code, ext, body)
	req.Opaque = c.opaque
	req.Serialize = c.st
	frame, err := protocol.AppendCommand(nil, req)
	if err != nil {
		return nil, err
	}
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(frame); err != nil {
		return nil, err
	}
	resp, err := protocol.ReadCommand(c.br, 0, nil)
	if err != nil {
		return nil, err
	}
	if !resp.IsResponse() || resp.Opaque != req.Opaque || resp.Serialize != req.Serialize {
		return nil, errors.New("response mismatch: " + resp.String())
	}
	return resp, nil
}

func (c *client) mustRoundTrip(code int32, ext map[string]string, body []byte) *protocol.Command {
	c.t.Helper()
	resp, err := c.roundTrip(code, ext, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *client) register(r Registration) *protocol.Command {
	c.t.Helper()
	body, err := protocol.MarshalBody(r.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	r.Header.BodyCrc32 = protocol.BodyCRC32(body)
	resp := c.mustRoundTrip(protocol.RegisterBroker, r.Header.Encode(), body)
	if resp.Code != protocol.Success {
		c.t.Fatalf("register: %s", resp)
	}
	return resp
}

// waitClosed reads until the server closes the connection, failing after a
// deadline.
func waitClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("server did not close the connection")
	}
}

func TestServerRouteOverTCP(t *testing.T) {
	for _, st := range []protocol.SerializeType{protocol.SerializeJSON, protocol.SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			srv := startServer(t, Options{})
			c := dial(t, srv.Addr())
			c.st = st
			c.register(registration("c1", "broker-a", 0, "127.0.0.1:10911", 1, topicConfig("T", 4)))

			rh := protocol.GetRouteInfoRequestHeader{Topic: "T"}
			resp := c.mustRoundTrip(protocol.GetRouteInfoByTopic, rh.Encode(), nil)
			if resp.Code != protocol.Success {
				t.Fatalf("route: %s", resp)
			}
			var rd protocol.TopicRouteData
			if err := protocol.UnmarshalBody(resp.Body, &rd); err != nil {
				t.Fatal(err)
			}
			if len(rd.BrokerDatas) != 1 || rd.BrokerDatas[0].MasterAddr() != "127.0.0.1:10911" {
				t.Fatalf("route %+v", rd)
			}

			rh.Topic = "missing"
			if resp := c.mustRoundTrip(protocol.GetRouteInfoByTopic, rh.Encode(), nil); resp.Code != protocol.TopicNotExist {
				t.Fatalf("unknown topic: %s", resp)
			}

			resp = c.mustRoundTrip(protocol.GetBrokerClusterInfo, nil, nil)
			var ci protocol.ClusterInfo
			if err := protocol.UnmarshalBody(resp.Body, &ci); err != nil || len(ci.ClusterAddrTable["c1"]) != 1 {
				t.Fatalf("cluster info %+v %v", ci, err)
			}

			kv := protocol.GetKVConfigRequestHeader{Namespace: protocol.NamespaceOrderTopicConfig, Key: "T"}
			if resp := c.mustRoundTrip(protocol.GetKVConfig, kv.Encode(), nil); resp.Code != protocol.QueryNotFound {
				t.Fatalf("kv: %s", resp)
			}
			put := protocol.PutKVConfigRequestHeader{Namespace: protocol.NamespaceOrderTopicConfig, Key: "T", Value: "broker-a:4"}
			c.mustRoundTrip(protocol.PutKVConfig, put.Encode(), nil)
			resp = c.mustRoundTrip(protocol.GetKVConfig, kv.Encode(), nil)
			if resp.Code != protocol.Success || resp.Ext("value") != "broker-a:4" {
				t.Fatalf("kv after put: %s", resp)
			}

			if resp := c.mustRoundTrip(protocol.PullMessage, nil, nil); resp.Code != protocol.RequestCodeNotSupported || resp.Remark == "" {
				t.Fatalf("unknown code: %s", resp)
			}
			if resp := c.mustRoundTrip(protocol.RegisterBroker, map[string]string{"brokerName": "x"}, nil); resp.Code != protocol.SystemError {
				t.Fatalf("incomplete header: %s", resp)
			}
		})
	}
}

func TestServerExpiryWithFakeClock(t *testing.T) {
	clk := newFakeClock()
	srv := startServer(t, Options{Clock: clk, ScanInterval: time.Hour})
	c := dial(t, srv.Addr())
	c.register(registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))

	// BROKER_HEARTBEAT keeps it alive past the first 120 s.
	clk.Advance(100 * time.Second)
	hb := protocol.BrokerHeartbeatRequestHeader{ClusterName: "c1", BrokerAddr: "a:1", BrokerName: "a"}
	c.mustRoundTrip(protocol.BrokerHeartbeat, hb.Encode(), nil)
	clk.Advance(100 * time.Second)
	if gone := srv.ScanNow(); len(gone) != 0 {
		t.Fatalf("expired despite the heartbeat: %+v", gone)
	}
	// QUERY_DATA_VERSION: unchanged version, and it refreshes liveness too.
	qh := protocol.QueryDataVersionRequestHeader{BrokerName: "a", BrokerAddr: "a:1", ClusterName: "c1"}
	dv, _ := protocol.MarshalBody(protocol.DataVersion{Timestamp: 1, Counter: 1})
	resp := c.mustRoundTrip(protocol.QueryDataVersion, qh.Encode(), dv)
	if resp.Code != protocol.Success || resp.Ext("changed") != "false" {
		t.Fatalf("query data version: %s", resp)
	}
	clk.Advance(121 * time.Second)
	if gone := srv.ScanNow(); len(gone) != 1 {
		t.Fatalf("not expired: %+v", gone)
	}
	rh := protocol.GetRouteInfoRequestHeader{Topic: "T"}
	if resp := c.mustRoundTrip(protocol.GetRouteInfoByTopic, rh.Encode(), nil); resp.Code != protocol.TopicNotExist {
		t.Fatalf("route after expiry: %s", resp)
	}
}

func TestServerUnregisterOnClose(t *testing.T) {
	srv := startServer(t, Options{})
	b := dial(t, srv.Addr())
	b.register(registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))
	b.nc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		live := 0
		srv.Inspect(func(rt *RouteTable) { live = rt.LiveBrokers() })
		if live == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("registration outlived its connection")
		}
		time.Sleep(5 * time.Millisecond)
	}

	keep := startServer(t, Options{KeepRegistrationOnClose: true})
	b2 := dial(t, keep.Addr())
	b2.register(registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))
	b2.nc.Close()
	// Wait until the server has handled the close, then the route must remain.
	deadline = time.Now().Add(30 * time.Second)
	for {
		keep.state.Lock()
		open := len(keep.state.conns)
		keep.state.Unlock()
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server did not notice the close")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := dial(t, keep.Addr())
	rh := protocol.GetRouteInfoRequestHeader{Topic: "T"}
	if resp := c.mustRoundTrip(protocol.GetRouteInfoByTopic, rh.Encode(), nil); resp.Code != protocol.Success {
		t.Fatalf("KeepRegistrationOnClose: %s", resp)
	}
}

func TestServerUnregisterBroker(t *testing.T) {
	srv := startServer(t, Options{})
	c := dial(t, srv.Addr())
	c.register(registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))
	uh := protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: 0, BrokerAddr: "a:1"}
	if resp := c.mustRoundTrip(protocol.UnregisterBroker, uh.Encode(), nil); resp.Code != protocol.Success {
		t.Fatalf("unregister: %s", resp)
	}
	resp := c.mustRoundTrip(protocol.GetAllTopicListFromNameServer, nil, nil)
	var tl protocol.TopicList
	if err := protocol.UnmarshalBody(resp.Body, &tl); err != nil || len(tl.TopicList) != 0 {
		t.Fatalf("topics after unregister: %s %v", resp.Body, err)
	}
}

// TestServerBadInput sends each kind of bad frame on its own connection
// while a well-behaved client keeps asking for a route on another.
func TestServerBadInput(t *testing.T) {
	srv := startServer(t, Options{MaxFrame: 1 << 20})
	setup := dial(t, srv.Addr())
	setup.register(registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4)))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var goodErr error
	good := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := dial(t, srv.Addr())
		rh := protocol.GetRouteInfoRequestHeader{Topic: "T"}
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := c.roundTrip(protocol.GetRouteInfoByTopic, rh.Encode(), nil)
			if err == nil && resp.Code != protocol.Success {
				err = errors.New("route: " + resp.String())
			}
			if err != nil {
				goodErr = err
				return
			}
			good++
		}
	}()

	frame := func(total, mark uint32, rest []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, total)
		b = binary.BigEndian.AppendUint32(b, mark)
		return append(b, rest...)
	}
	bad := map[string][]byte{
		"oversized frame":         binary.BigEndian.AppendUint32(nil, 1<<20+1),
		"negative length":         binary.BigEndian.AppendUint32(nil, 0xFFFFFFF0),
		"header past the frame":   frame(10, 200, []byte("{}{}{}")),
		"garbage json":            frame(4+9, 9, []byte(`{"code":x`)),
		"truncated binary header": frame(4+5, 1<<24|5, []byte{0, 105, 9, 1, 61}),
		"unknown serialize type":  frame(4+2, 3<<24|2, []byte("{}")),
	}
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			c := dial(t, srv.Addr())
			if _, err := c.nc.Write(b); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, c.nc)
		})
	}
	t.Run("unknown code keeps the connection", func(t *testing.T) {
		c := dial(t, srv.Addr())
		if resp := c.mustRoundTrip(999, nil, nil); resp.Code != protocol.RequestCodeNotSupported {
			t.Fatalf("unknown code: %s", resp)
		}
		// CVE-2023-37582: a config update that would write a file of the
		// caller's choosing. Nothing changes the configuration at runtime.
		body := []byte("configStorePath=/tmp/evil\nproductEnvName=x")
		if resp := c.mustRoundTrip(protocol.UpdateNamesrvConfig, nil, body); resp.Code != protocol.RequestCodeNotSupported {
			t.Fatalf("UPDATE_NAMESRV_CONFIG: %s", resp)
		}
		if resp := c.mustRoundTrip(protocol.GetBrokerClusterInfo, nil, nil); resp.Code != protocol.Success {
			t.Fatalf("after unknown code: %s", resp)
		}
	})
	t.Run("one-way gets no answer", func(t *testing.T) {
		c := dial(t, srv.Addr())
		req := protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil)
		req.MarkOneway()
		req.Opaque = 77
		f, _ := protocol.AppendCommand(nil, req)
		c.nc.Write(f)
		c.opaque = 100
		resp := c.mustRoundTrip(protocol.GetBrokerClusterInfo, nil, nil)
		if resp.Opaque != 101 {
			t.Fatalf("one-way was answered: %s", resp)
		}
	})
	close(stop)
	wg.Wait()
	if goodErr != nil {
		t.Fatalf("well-behaved client failed after %d requests: %v", good, goodErr)
	}
	if good == 0 {
		t.Fatal("well-behaved client made no request")
	}
}

func TestServerCloseIsClean(t *testing.T) {
	srv, err := New(Options{Listen: "127.0.0.1:0", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.Addr())
	c.mustRoundTrip(protocol.GetBrokerClusterInfo, nil, nil)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, c.nc)
	if err := srv.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := srv.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}
}

func TestOptions(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Listen != DefaultListen || o.ScanInterval != 10*time.Second || o.BrokerExpiry != 120*time.Second {
		t.Fatalf("defaults %s", o)
	}
	bad := Options{Listen: "nope", ScanInterval: -1, BrokerExpiry: -1, MaxFrame: -1}
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"Listen", "ScanInterval", "BrokerExpiry", "MaxFrame"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
}
