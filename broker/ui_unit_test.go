package broker

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// TestUILoopbackListener: only a loopback admin listener lets a reset
// through with ACL off.
func TestUILoopbackListener(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8081": true, "[::1]:8081": true, "localhost:8081": true,
		"0.0.0.0:8081": false, "[::]:8081": false, "10.1.2.3:8081": false, "": false, "garbage": false,
	} {
		if got := loopbackListener(addr); got != want {
			t.Errorf("loopbackListener(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestUISlavesFromStats reads a master's slave lines, addresses with
// colons included, and ignores the rest; a malformed slave line is an
// error, not a slave with zeroes.
func TestUISlavesFromStats(t *testing.T) {
	stats := []protocol.Stat{
		{Name: "ha_role", Value: "ASYNC_MASTER"},
		{Name: "slave:127.0.0.1:10912:ack_offset", Value: "100"},
		{Name: "slave:127.0.0.1:10912:behind_bytes", Value: "20"},
		{Name: "slave:127.0.0.1:10912:lag_ms", Value: "5"},
		{Name: "slave:127.0.0.1:10912:in_sync", Value: "1"},
		{Name: "slave:[::1]:10913:ack_offset", Value: "7"},
		{Name: "slave:[::1]:10913:in_sync", Value: "0"},
	}
	got, err := slavesFromStats(stats)
	want := []uiSlave{{Addr: "127.0.0.1:10912", AckOffset: 100, BehindBytes: 20, LagMs: 5, InSync: true}, {Addr: "[::1]:10913", AckOffset: 7}}
	if err != nil || len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("slaves %+v, %v; want %+v", got, err, want)
	}
	if got, err := slavesFromStats(stats[:1]); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no slave: %#v, %v; want an empty list", got, err)
	}
	if got, err := slavesFromStats(append(stats, protocol.Stat{Name: "slave:nofield", Value: "1"})); err == nil {
		t.Fatalf("slave:nofield read as %+v", got)
	}
}

// TestUIBinaryAndLargeBodies: a body that is not UTF-8 is shown as
// base64; one over 16 KiB is cut and says so.
func TestUIBinaryAndLargeBodies(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("ui-bin", 1)); r.Code != protocol.Success {
		t.Fatalf("create: %s", r)
	}
	big := strings.Repeat("x", uiBodyMax+10)
	for _, body := range [][]byte{{0xff, 0xfe, 0x00}, []byte(big)} {
		if r := c.call(sendReq("ui-bin", 0, body, map[string]string{record.PropertyKeys: "kb"})); r.Code != protocol.Success {
			t.Fatalf("send: %s", r)
		}
	}
	uiWaitFor(t, "the messages to reach the queue", func() bool { return b.store.MaxQueueOffset("ui-bin", 0) == 2 })
	u := newUIClient(t, b)
	var ms []uiMessage
	u.get("/ui/api/messages?topic=ui-bin&queue=0&offset=0&n=2", &ms)
	if len(ms) != 2 || !ms[0].BodyBase64 || ms[0].Body != "//4A" || ms[0].BodySize != 3 ||
		ms[1].BodyBase64 || !ms[1].Truncated || len(ms[1].Body) != uiBodyMax || ms[1].BodySize != len(big) {
		t.Fatalf("bodies: %+v", ms)
	}
}

// TestUIClusterNameServerDown: with its name server unreachable, the
// cluster view answers 502 naming it; the broker's own views still answer.
func TestUIClusterNameServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	b := startBroker(t, "", func(c *Config) { c.NamesrvAddrs = []string{dead} })
	defer b.Close()
	u := newUIClient(t, b)
	if msg := u.getErr("/ui/api/cluster", http.StatusBadGateway); !strings.Contains(msg, "name server "+dead) {
		t.Fatalf("cluster error %q does not name the name server", msg)
	}
	var o uiOverview
	u.get("/ui/api/overview", &o)
	if o.BrokerName != b.Config().BrokerName || len(o.NameServers) != 1 || o.NameServers[0] != dead {
		t.Fatalf("overview: %+v", o)
	}
}
