package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// registerBomb is a compressed register body whose first piece declares
// declared bytes and holds real zero bytes.
func registerBomb(declared int32, real int) []byte {
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	zw.Write(binary.BigEndian.AppendUint32(nil, uint32(declared)))
	zw.Write(make([]byte, real))
	zw.Close()
	return buf.Bytes()
}

func bombHeader(name string) map[string]string {
	h := protocol.RegisterBrokerRequestHeader{ClusterName: "c", BrokerName: name, BrokerAddr: "127.0.0.1:1",
		HAServerAddr: "127.0.0.1:2", Compressed: true}
	return h.Encode()
}

// Four concurrent register requests of a few hundred bytes, each declaring
// a 256 MiB piece, are refused and cost the name server a bounded amount.
func TestRegisterBombsCostLittle(t *testing.T) {
	srv := startServer(t, Options{})
	bomb := registerBomb(256<<20, 0)
	clients := make([]*client, 4)
	for i := range clients {
		clients[i] = dial(t, srv.Addr())
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	// A well-behaved broker registers throughout.
	good := dial(t, srv.Addr())
	var goodErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20 && goodErr == nil; i++ {
			r := registration("c", "good", 0, "127.0.0.1:10911", int64(i), topicConfig("T", 4))
			body, _ := protocol.MarshalBody(r.Body)
			resp, err := good.roundTrip(protocol.RegisterBroker, r.Header.Encode(), body)
			if err == nil && resp.Code != protocol.Success {
				err = errors.New(resp.String())
			}
			goodErr = err
		}
	}()
	resps := make([]*protocol.Command, len(clients))
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i], errs[i] = c.roundTrip(protocol.RegisterBroker, bombHeader(fmt.Sprint("bomb", i)), bomb)
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if goodErr != nil {
		t.Fatalf("a well-behaved registration failed: %v", goodErr)
	}
	for i := range clients {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if resps[i].Code != protocol.SystemError {
			t.Fatalf("bomb %d answered %s", i, resps[i])
		}
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Fatalf("4 bombs of %d bytes cost the name server %d bytes", len(bomb), got)
	}
	srv.Inspect(func(rt *RouteTable) {
		if n := rt.LiveBrokers(); n != 1 {
			t.Fatalf("%d brokers registered, want the good one only", n)
		}
		if _, ok := rt.Route("T"); !ok {
			t.Fatal("the good broker's route is gone")
		}
	})
}

// A body that really inflates past the frame limit is refused with the
// reason, and nothing is registered.
func TestRegisterInflatePastLimit(t *testing.T) {
	srv := startServer(t, Options{MaxFrame: 1 << 20})
	c := dial(t, srv.Addr())
	resp := c.mustRoundTrip(protocol.RegisterBroker, bombHeader("big"), registerBomb(4<<20, 4<<20))
	if resp.Code != protocol.SystemError || !strings.Contains(resp.Remark, "limit") {
		t.Fatalf("inflating 4 MiB against 1 MiB: %s", resp)
	}
	srv.Inspect(func(rt *RouteTable) {
		if n := rt.LiveBrokers(); n != 0 {
			t.Fatalf("%d brokers registered", n)
		}
	})
}

// Two 9 MiB values put into ORDER_TOPIC_CONFIG are refused, so the
// registration answer, which carries that namespace, still fits a frame
// and a broker registering meanwhile keeps its routes.
func TestKVBoundsKeepRegistrationAnswerSmall(t *testing.T) {
	srv := startServer(t, Options{})
	b := dial(t, srv.Addr())
	reg := registration("c", "broker-a", 0, "127.0.0.1:10911", 1, topicConfig("T", 4))
	b.register(reg)

	c := dial(t, srv.Addr())
	put := func(ns, key, value string) *protocol.Command {
		h := protocol.PutKVConfigRequestHeader{Namespace: ns, Key: key, Value: value}
		return c.mustRoundTrip(protocol.PutKVConfig, h.Encode(), nil)
	}
	big := strings.Repeat("x", 9<<20)
	for _, k := range []string{"T", "U"} {
		if r := put(protocol.NamespaceOrderTopicConfig, k, big); r.Code != protocol.SystemError || !strings.Contains(r.Remark, "value of") {
			t.Fatalf("9 MiB value: %s", r)
		}
		get := protocol.KVConfigRequestHeader{Namespace: protocol.NamespaceOrderTopicConfig, Key: k}
		if r := c.mustRoundTrip(protocol.GetKVConfig, get.Encode(), nil); r.Code != protocol.QueryNotFound {
			t.Fatalf("refused value stored: %s", r)
		}
	}
	// Fill the namespace to its bound with values at the value bound: the
	// put that would pass it is refused.
	value := strings.Repeat("v", MaxKVValueLen)
	refused := -1
	for i := 0; i < MaxKVNamespaceBytes/MaxKVValueLen+2; i++ {
		r := put(protocol.NamespaceOrderTopicConfig, fmt.Sprint("k", i), value)
		if r.Code != protocol.Success {
			if !strings.Contains(r.Remark, "namespace") {
				t.Fatalf("put %d: %s", i, r)
			}
			refused = i
			break
		}
	}
	if refused < 0 {
		t.Fatal("namespace grew past its bound")
	}
	// The registration answer carries the full namespace and fits.
	resp := b.register(reg)
	if len(resp.Body) > MaxKVNamespaceBytes+64<<10 || len(resp.Body) < MaxKVNamespaceBytes/2 {
		t.Fatalf("registration answer body of %d bytes", len(resp.Body))
	}
	list := c.mustRoundTrip(protocol.GetKVListByNamespace, map[string]string{"namespace": protocol.NamespaceOrderTopicConfig}, nil)
	if list.Code != protocol.Success {
		t.Fatalf("kv list: %s", list)
	}
	route := c.mustRoundTrip(protocol.GetRouteInfoByTopic, (&protocol.GetRouteInfoRequestHeader{Topic: "T"}).Encode(), nil)
	if route.Code != protocol.Success {
		t.Fatalf("route of T lost: %s", route)
	}
	// Deleting frees room again.
	del := protocol.KVConfigRequestHeader{Namespace: protocol.NamespaceOrderTopicConfig, Key: "k0"}
	c.mustRoundTrip(protocol.DeleteKVConfig, del.Encode(), nil)
	if r := put(protocol.NamespaceOrderTopicConfig, "again", value); r.Code != protocol.Success {
		t.Fatalf("put after delete: %s", r)
	}
}

func TestKVLimits(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	for _, tc := range []struct{ ns, k, v string }{
		{"", "k", "v"}, {"ns", "", "v"},
		{strings.Repeat("n", MaxKVNamespaceLen+1), "k", "v"},
		{"ns", strings.Repeat("k", MaxKVKeyLen+1), "v"},
		{"ns", "k", strings.Repeat("v", MaxKVValueLen+1)},
	} {
		if err := rt.PutKV(tc.ns, tc.k, tc.v); !errors.Is(err, ErrLimit) {
			t.Fatalf("put %.20q/%.20q (%d bytes): %v", tc.ns, tc.k, len(tc.v), err)
		}
	}
	if len(rt.kv) != 0 || rt.kvTotal != 0 {
		t.Fatalf("refused puts stored: %v", rt.kv)
	}
	for i := 0; i < MaxKVNamespaces; i++ {
		if err := rt.PutKV(fmt.Sprint("ns", i), "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.PutKV("one-more", "k", "v"); !errors.Is(err, ErrLimit) {
		t.Fatalf("namespace %d: %v", MaxKVNamespaces+1, err)
	}
	// Replacing a value accounts for the old one; deleting gives it back.
	if err := rt.PutKV("ns0", "k", "longer value"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxKVNamespaces; i++ {
		rt.DeleteKV(fmt.Sprint("ns", i), "k")
	}
	if rt.kvTotal != 0 || len(rt.kvBytes) != 0 {
		t.Fatalf("after deleting everything: total %d, %v", rt.kvTotal, rt.kvBytes)
	}
}

func TestRegistrationLimits(t *testing.T) {
	rt := NewRouteTable(newFakeClock(), 0)
	long := strings.Repeat("x", MaxNameLen+1)
	bad := []Registration{
		registration(long, "b", 0, "a:1", 1),
		registration("c", long, 0, "a:1", 1),
		registration("c", "b", 0, long, 1),
		registration("c", "b", 0, "a:1", 1, topicConfig(long, 1)),
	}
	fs := registration("c", "b", 0, "a:1", 1)
	fs.Body.FilterServerList = make([]string, MaxFilterServers+1)
	bad = append(bad, fs)
	for i, r := range bad {
		if err := rt.CheckRegistration(r); !errors.Is(err, ErrLimit) {
			t.Fatalf("registration %d: %v", i, err)
		}
	}
	for i := 0; i < MaxBrokerGroups; i++ {
		r := registration("c", fmt.Sprint("b", i), 0, fmt.Sprint("a:", i), 1)
		if err := rt.CheckRegistration(r); err != nil {
			t.Fatal(err)
		}
		rt.RegisterBroker(r)
	}
	if err := rt.CheckRegistration(registration("c", "one-more", 0, "z:1", 1)); !errors.Is(err, ErrLimit) {
		t.Fatalf("broker group %d: %v", MaxBrokerGroups+1, err)
	}
	if err := rt.CheckRegistration(registration("c", "b0", 0, "a:0", 2)); err != nil {
		t.Fatalf("a registered broker re-registering: %v", err)
	}
	for id := int64(1); id < MaxBrokerAddrs; id++ {
		rt.RegisterBroker(registration("c", "b0", id, fmt.Sprint("s:", id), 1))
	}
	if err := rt.CheckRegistration(registration("c", "b0", MaxBrokerAddrs, "s:x", 1)); !errors.Is(err, ErrLimit) {
		t.Fatalf("address %d of one broker: %v", MaxBrokerAddrs+1, err)
	}
	// The topic list stops growing at its bound.
	var topics []protocol.TopicConfig
	for i := 0; i < MaxTopicListBytes/200+1; i++ {
		topics = append(topics, topicConfig(fmt.Sprintf("%0200d", i), 1))
	}
	if err := rt.CheckRegistration(registration("c", "b1", 0, "a:1", 2, topics...)); !errors.Is(err, ErrLimit) {
		t.Fatalf("topic list past its bound: %v", err)
	}
}

// A registered broker whose new registration is refused keeps its
// liveness and routes: the refusal does not make it expire.
func TestRefusedRegistrationKeepsBrokerAlive(t *testing.T) {
	clk := newFakeClock()
	srv := startServer(t, Options{Clock: clk})
	c := dial(t, srv.Addr())
	c.register(registration("c", "b", 0, "127.0.0.1:10911", 1, topicConfig("T", 4)))
	for i := 0; i < 3; i++ {
		clk.Advance(100 * time.Second)
		r := registration("c", "b", 0, "127.0.0.1:10911", int64(2+i), topicConfig("T", 4), topicConfig(strings.Repeat("x", MaxNameLen+1), 1))
		body, _ := protocol.MarshalBody(r.Body)
		resp := c.mustRoundTrip(protocol.RegisterBroker, r.Header.Encode(), body)
		if resp.Code != protocol.SystemError || !strings.Contains(resp.Remark, "topic name") {
			t.Fatalf("registration with a long topic name: %s", resp)
		}
		if gone := srv.ScanNow(); len(gone) != 0 {
			t.Fatalf("refused broker expired: %v", gone)
		}
	}
	srv.Inspect(func(rt *RouteTable) {
		if _, ok := rt.Route("T"); !ok {
			t.Fatal("route of T gone")
		}
		if len(rt.Topics()) != 1 {
			t.Fatalf("topics %v", rt.Topics())
		}
	})
}
