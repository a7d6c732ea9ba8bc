package acl

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

const sampleFile = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.{1,2}
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
`

func TestParseSample(t *testing.T) {
	c, err := Parse([]byte(sampleFile))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Accounts["RocketMQ"]
	if a == nil || a.Admin || a.DefaultTopicPerm != Deny || a.DefaultGroupPerm != Sub ||
		a.TopicPerms["topicB"] != Pub|Sub || a.TopicPerms["topicC"] != Sub || a.GroupPerms["groupA"] != Deny {
		t.Fatalf("account: %+v", a)
	}
	if b := c.Accounts["rocketmq2"]; b == nil || !b.Admin || !b.white.Match(netip.MustParseAddr("192.168.1.7")) {
		t.Fatalf("admin account: %+v", b)
	}
	if len(c.GlobalWhite) != 2 || !c.GlobalWhite[1].Match(netip.MustParseAddr("192.168.0.2")) {
		t.Fatalf("global white: %v", c.GlobalWhite)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		"accounts:\n  - accessKey: short\n    secretKey: 12345678\n",
		"accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n    topicPerms: [t=WRITE]\n",
		"accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n    topicPerms: [nothing]\n",
		"accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n    whiteRemoteAddress: 1.2.3.300\n",
		"accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n  - accessKey: longenough\n    secretKey: 12345678\n",
		"acounts: []\n",
		"globalWhiteRemoteAddresses: [\"*.1.2.3\"]\n",
		"accounts: [",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if c, err := Parse(nil); err != nil || len(c.Accounts) != 0 {
		t.Fatalf("empty file: %v %v", c, err)
	}
}

func TestAddressPatterns(t *testing.T) {
	cases := []struct {
		pat string
		yes []string
		no  []string
	}{
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"", nil, []string{"1.2.3.4"}},
		{"127.0.0.1", []string{"127.0.0.1", "::ffff:127.0.0.1"}, []string{"127.0.0.2"}},
		{"192.168.0.{1,2}", []string{"192.168.0.1", "192.168.0.2"}, []string{"192.168.0.3"}},
		{"10.0.0.1,10.0.0.9", []string{"10.0.0.9"}, []string{"10.0.0.2"}},
		{"192.168.1.1-5", []string{"192.168.1.1", "192.168.1.5"}, []string{"192.168.1.6", "192.168.2.3"}},
		{"192.168.*", []string{"192.168.7.9"}, []string{"192.169.0.1"}},
		{"192.168.10-20.*", []string{"192.168.15.200"}, []string{"192.168.21.1"}},
		{"10.0.0.0/8", []string{"10.200.0.1"}, []string{"11.0.0.1", "::1"}},
		{"::1", []string{"::1"}, []string{"127.0.0.1"}},
	}
	for _, c := range cases {
		m, err := ParseAddressPattern(c.pat)
		if err != nil {
			t.Fatalf("%q: %v", c.pat, err)
		}
		for _, a := range c.yes {
			if !m.Match(netip.MustParseAddr(a)) {
				t.Errorf("%q does not match %s", c.pat, a)
			}
		}
		for _, a := range c.no {
			if m.Match(netip.MustParseAddr(a)) {
				t.Errorf("%q matches %s", c.pat, a)
			}
		}
	}
	for _, bad := range []string{"1.2.3", "192.168.*.1", "192.168.5-1.*", "fe80::*", "1.2.3.{4,x}", "10.0.0.0/33", "not-an-address"} {
		if _, err := ParseAddressPattern(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func signed(code int32, ext map[string]string, body []byte, ak, sk string) Request {
	return Request{Code: code, Ext: Sign(ext, body, ak, sk, ""), Body: body, Remote: netip.MustParseAddr("127.0.0.1")}
}

func TestCheck(t *testing.T) {
	c, err := Parse([]byte(sampleFile))
	if err != nil {
		t.Fatal(err)
	}
	reason := func(r Request) string {
		_, d := c.Check(r)
		if d == nil {
			return ""
		}
		return d.Reason
	}
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"unsigned", Request{Code: protocol.SendMessage, Ext: map[string]string{"topic": "topicB"}, Remote: netip.MustParseAddr("127.0.0.1")}, ReasonUnsigned},
		{"unknown", signed(protocol.SendMessage, map[string]string{"topic": "topicB"}, nil, "nobody12", "12345678"), ReasonUnknownAccount},
		{"bad signature", signed(protocol.SendMessage, map[string]string{"topic": "topicB"}, nil, "RocketMQ", "wrongkey"), ReasonBadSignature},
		{"pub allowed", signed(protocol.SendMessage, map[string]string{"topic": "topicB"}, nil, "RocketMQ", "12345678"), ""},
		{"pub v2 allowed", signed(protocol.SendMessageV2, map[string]string{"b": "topicB"}, nil, "RocketMQ", "12345678"), ""},
		{"pub denied", signed(protocol.SendMessage, map[string]string{"topic": "topicA"}, nil, "RocketMQ", "12345678"), ReasonNoPermission},
		{"pub on sub-only", signed(protocol.SendMessageV2, map[string]string{"b": "topicC"}, nil, "RocketMQ", "12345678"), ReasonNoPermission},
		{"default topic deny", signed(protocol.SendMessage, map[string]string{"topic": "other"}, nil, "RocketMQ", "12345678"), ReasonNoPermission},
		{"pull allowed", signed(protocol.PullMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupC"}, nil, "RocketMQ", "12345678"), ""},
		{"pull group denied", signed(protocol.PullMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupA"}, nil, "RocketMQ", "12345678"), ReasonNoPermission},
		{"pop allowed", signed(protocol.PopMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupC"}, nil, "RocketMQ", "12345678"), ""},
		{"pop group denied", signed(protocol.PopMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupA"}, nil, "RocketMQ", "12345678"), ReasonNoPermission},
		{"ack group denied", signed(protocol.AckMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupA"}, nil, "RocketMQ", "12345678"), ReasonNoPermission},
		{"change invisible group denied", signed(protocol.ChangeMessageInvisibleTime, map[string]string{"topic": "topicC", "consumerGroup": "groupA"}, nil, "RocketMQ", "12345678"), ReasonNoPermission},
		{"pull retry topic = group", signed(protocol.PullMessage, map[string]string{"topic": "%RETRY%groupX", "consumerGroup": "groupX"}, nil, "RocketMQ", "12345678"), ""},
		{"admin code", signed(protocol.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "RocketMQ", "12345678"), ReasonNotAdmin},
		{"heartbeat denied group", signed(protocol.HeartBeat, nil, []byte(`{"clientID":"c","producerDataSet":[],"consumerDataSet":[{"groupName":"groupA","subscriptionDataSet":[]}]}`), "RocketMQ", "12345678"), ReasonNoPermission},
		{"heartbeat bad body", signed(protocol.HeartBeat, nil, []byte(`{`), "RocketMQ", "12345678"), ReasonBadRequest},
		{"global white", Request{Code: protocol.UpdateAndCreateTopic, Remote: netip.MustParseAddr("10.10.103.4")}, ""},
	}
	for _, cs := range cases {
		if got := reason(cs.req); got != cs.want {
			t.Errorf("%s: reason %q, want %q", cs.name, got, cs.want)
		}
	}
	// An admin account without perms of its own may do anything; it is
	// white-listed from 192.168.1.* without a signature.
	if r := reason(signed(protocol.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "rocketmq2", "12345678")); r != "" {
		t.Fatalf("admin: %s", r)
	}
	r := Request{Code: protocol.SendMessage, Ext: map[string]string{FieldAccessKey: "rocketmq2"}, Remote: netip.MustParseAddr("192.168.1.3")}
	if got := reason(r); got != "" {
		t.Fatalf("account white list: %s", got)
	}
}

func TestCounters(t *testing.T) {
	var c Counters
	c.Add(ReasonUnsigned, protocol.SendMessage)
	c.Add(ReasonUnsigned, protocol.SendMessage)
	c.Add(ReasonNotAdmin, 9999)
	s := c.Snapshot()
	if c.Total() != 3 || len(s) != 2 || s[0].Code != "OTHER" || s[1].Code != "SEND_MESSAGE" || s[1].N != 2 {
		t.Fatalf("counters %+v", s)
	}
}

func TestStoreReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	write := func(s string) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(path, 0, nil); err == nil {
		t.Fatal("opened a missing file")
	}
	write(sampleFile)
	s, err := Open(path, 10*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Config().Accounts["RocketMQ"] == nil {
		t.Fatal("not loaded")
	}
	write(strings.Replace(sampleFile, "RocketMQ", "RocketMQ3", 1))
	deadline := time.Now().Add(30 * time.Second)
	for s.Config().Accounts["RocketMQ3"] == nil {
		if time.Now().After(deadline) {
			t.Fatal("change not picked up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A bad file keeps the previous accounts.
	write("accounts: [")
	if _, err := s.Reload(); err == nil {
		// the poller may have seen it first; the state must be unchanged either way
		t.Log("poller saw the bad file first")
	}
	if s.Config().Accounts["RocketMQ3"] == nil {
		t.Fatal("bad file replaced the accounts")
	}
}
