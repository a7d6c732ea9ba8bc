package broker

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/protocol"
)

// The ACL tests' accounts: an admin the broker itself uses, a second
// admin, and a user who may publish to aclPub, subscribe to aclSub, and
// consume as group aclGroup.
const (
	aclAdminKey    = "adminKey1"
	aclAdminSecret = "adminSecret1"
	aclOtherAdmin  = "adminKey2"
	aclUserKey     = "userKey01"
	aclUserSecret  = "userSecret1"
	aclTestFile    = `accounts:
  - accessKey: adminKey1
    secretKey: adminSecret1
    admin: true
  - accessKey: adminKey2
    secretKey: adminSecret2
    admin: true
  - accessKey: userKey01
    secretKey: userSecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - aclPub=PUB
      - aclSub=SUB
      - aclBoth=PUB|SUB
    groupPerms:
      - aclGroup=SUB
`
)

func writeACLFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startACLDev starts a name server and broker with ACL on, the broker
// signing as aclAdminKey; it returns the dev cluster and the file.
func startACLDev(t *testing.T) (*testCluster, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain_acl.yml")
	writeACLFile(t, file, aclTestFile)
	cfg := Config{MappedFileSizeCommitLog: 4 << 20, AdminListen: "127.0.0.1:0"}
	cfg.ACLEnable, cfg.ACLFile, cfg.ACLReloadInterval = true, file, 10*time.Millisecond
	cfg.AccessKey, cfg.SecretKey = aclAdminKey, aclAdminSecret
	dev, err := startCluster(clusterOptions{Dir: filepath.Join(dir, "store"), Logger: quietLogger(), Broker: cfg, NamesrvACLFile: file})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev, file
}

func signed(req *protocol.Command, ak, sk string) *protocol.Command {
	acl.SignCommand(req, ak, sk, "")
	return req
}

func wantDenied(t *testing.T, what string, resp *protocol.Command, remark string) {
	t.Helper()
	if resp.Code != protocol.NoPermission || !strings.Contains(resp.Remark, remark) {
		t.Fatalf("%s: %s %q, want NO_PERMISSION with %q", what, protocol.ResponseName(resp.Code), resp.Remark, remark)
	}
}

func TestACLBrokerRequests(t *testing.T) {
	dev, _ := startACLDev(t)
	b := dev.Broker
	c := dialRaw(t, dev.BrokerAddr())
	admin := func(req *protocol.Command) *protocol.Command { return signed(req, aclAdminKey, aclAdminSecret) }
	user := func(req *protocol.Command) *protocol.Command { return signed(req, aclUserKey, aclUserSecret) }
	for _, topic := range []string{"aclPub", "aclSub", "aclBoth"} {
		if r := c.call(admin(createTopicReq(topic, 2))); r.Code != protocol.Success {
			t.Fatalf("admin create %s: %s", topic, r)
		}
	}
	base := b.acl.denied.Total()
	wantDenied(t, "unsigned send", c.call(sendReq("aclPub", 0, []byte("x"), nil)), "carries no AccessKey")
	wantDenied(t, "unknown account", c.call(signed(sendReq("aclPub", 0, []byte("x"), nil), "nobody99", "whatever1")), "no account")
	bad := user(sendReq("aclPub", 0, []byte("x"), nil))
	bad.Body = []byte("y") // signed over another body
	wantDenied(t, "bad signature", c.call(bad), "signature check failed")
	wantDenied(t, "publish to a SUB-only topic", c.call(user(sendReq("aclSub", 0, []byte("x"), nil))), `topic "aclSub"`)
	wantDenied(t, "publish to an unlisted topic", c.call(user(sendReq("other", 0, []byte("x"), nil))), `topic "other"`)
	wantDenied(t, "non-admin create topic", c.call(user(createTopicReq("new", 1))), "needs an admin account")
	wantDenied(t, "non-admin config dump", c.call(user(protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))), "needs an admin account")
	wantDenied(t, "pull with a denied group", c.call(user(pullReq("otherGroup", "aclSub", 0, 0, 32, 0, "*"))), `group "otherGroup"`)
	wantDenied(t, "pull from a PUB-only topic", c.call(user(pullReq("aclGroup", "aclPub", 0, 0, 32, 0, "*"))), `topic "aclPub"`)
	wantDenied(t, "heartbeat naming a denied group", c.call(user(heartbeatReq(t, "cid", "otherGroup", "aclSub"))), `group "otherGroup"`)
	if got := b.acl.denied.Total() - base; got != 10 {
		t.Fatalf("refusals counted %d, want 10: %+v", got, b.acl.denied.Snapshot())
	}

	// Allowed requests, inline sends and dispatched requests alike.
	pubResp := c.call(user(sendReq("aclPub", 0, []byte("hello"), nil)))
	if pubResp.Code != protocol.Success {
		t.Fatalf("user send: %s", pubResp)
	}
	bothResp := c.call(user(sendReq("aclBoth", 0, []byte("hello"), nil)))
	if bothResp.Code != protocol.Success {
		t.Fatalf("user send: %s", bothResp)
	}
	// VIEW_MESSAGE_BY_ID: SUB on the topic of the message it reads.
	view := func(resp *protocol.Command) *protocol.Command {
		_, off, err := protocol.ParseOffsetMsgID(resp.Ext("msgId"))
		if err != nil {
			t.Fatal(err)
		}
		h := protocol.ViewMessageRequestHeader{Offset: off}
		return c.call(user(protocol.NewRequest(protocol.ViewMessageByID, h.Encode(), nil)))
	}
	wantDenied(t, "view a message of a PUB-only topic", view(pubResp), `topic "aclPub"`)
	if r := view(bothResp); r.Code != protocol.Success {
		t.Fatalf("view: %s", r)
	}
	if r := c.call(user(heartbeatReq(t, "cid", "aclGroup", "aclBoth"))); r.Code != protocol.Success {
		t.Fatalf("user heartbeat: %s", r)
	}
	waitFor(t, func() bool {
		r := c.call(user(pullReq("aclGroup", "aclBoth", 0, 0, 32, 0, "*")))
		if r.Code == protocol.NoPermission {
			t.Fatalf("user pull: %s", r)
		}
		return r.Code == protocol.Success && len(decodeRecords(t, r.Body)) == 1
	}, "the user's pull returns the message")
	// The Go client's form: SecurityToken present but not signed.
	req := sendReq("aclPub", 0, []byte("tok"), nil)
	acl.SignCommand(req, aclUserKey, aclUserSecret, "")
	req.ExtFields[acl.FieldSecurityToken] = "some-token"
	if r := c.call(req); r.Code != protocol.Success {
		t.Fatalf("send with an unsigned token: %s", r)
	}

	// Counted in /metrics (behind basic auth) and in stats.
	url := "http://" + b.AdminAddr() + "/metrics"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without auth: %s", resp.Status)
	}
	for _, creds := range [][2]string{{aclUserKey, aclUserSecret}, {aclAdminKey, "wrong"}} {
		hr, _ := http.NewRequest("GET", url, nil)
		hr.SetBasicAuth(creds[0], creds[1])
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("/metrics as %s: %s", creds[0], resp.Status)
		}
	}
	hr, _ := http.NewRequest("GET", url, nil)
	hr.SetBasicAuth(aclAdminKey, aclAdminSecret)
	resp, err = http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `samsa_broker_acl_denied_total{code="SEND_MESSAGE",reason="no_permission"} 2`) ||
		!strings.Contains(string(body), `samsa_broker_acl_denied_total{code="OTHER",reason="admin_auth"} 3`) {
		t.Fatalf("/metrics as admin: %s\n%s", resp.Status, grepLines(string(body), "acl"))
	}
	lines := map[string]bool{}
	for _, l := range b.aclStats() {
		lines[l.name] = true
	}
	if !lines["acl_denied:bad_signature:SEND_MESSAGE"] || !lines["acl_denied:not_admin:UPDATE_AND_CREATE_TOPIC"] {
		t.Fatalf("stats: %v", lines)
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestACLReloadAndWhiteList: a change to the file is seen by the next
// requests (the poll is 10 ms); a global white list lets unsigned requests
// through; a bad file keeps the accounts.
func TestACLReloadAndWhiteList(t *testing.T) {
	dev, file := startACLDev(t)
	c := dialRaw(t, dev.BrokerAddr())
	if r := c.call(signed(createTopicReq("aclPub", 1), aclAdminKey, aclAdminSecret)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	wantDenied(t, "unsigned", c.call(sendReq("aclPub", 0, []byte("x"), nil)), "no AccessKey")
	writeACLFile(t, file, "globalWhiteRemoteAddresses:\n  - 127.0.0.1\n"+aclTestFile)
	waitFor(t, func() bool { return c.call(sendReq("aclPub", 0, []byte("x"), nil)).Code == protocol.Success },
		"unsigned send allowed from the white-listed address")
	// A file that does not parse keeps the previous accounts.
	writeACLFile(t, file, "accounts: [")
	time.Sleep(100 * time.Millisecond) // ten polls; the outcome must not change
	if r := c.call(sendReq("aclPub", 0, []byte("x"), nil)); r.Code != protocol.Success {
		t.Fatalf("a bad file changed the accounts: %s", r)
	}
	// The user's permission taken away: the next requests see it.
	user := func() *protocol.Command {
		return signed(sendReq("aclPub", 0, []byte("x"), nil), aclUserKey, aclUserSecret)
	}
	writeACLFile(t, file, strings.Replace(aclTestFile, "aclPub=PUB", "aclPub=DENY", 1))
	waitFor(t, func() bool { return c.call(user()).Code == protocol.NoPermission }, "permission withdrawn")
	writeACLFile(t, file, aclTestFile)
	waitFor(t, func() bool { return c.call(user()).Code == protocol.Success }, "permission restored")
}

// dialText connects for the text protocol (dialRaw's reader would eat
// the answers).
func dialText(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

func TestACLTextAuthWithACLOff(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	nc := dialText(t, b.Addr())
	if _, err := nc.Write([]byte("auth anyKey1 anySecret\r\nversion\r\nquit\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	out, _ := io.ReadAll(nc)
	if !strings.HasPrefix(string(out), "OK\r\nVERSION ") {
		t.Fatalf("auth with ACL off: %q", out)
	}
}

func TestACLTextProtocol(t *testing.T) {
	dev, _ := startACLDev(t)
	talk := func(lines ...string) string {
		nc := dialText(t, dev.BrokerAddr())
		for _, l := range lines {
			if _, err := nc.Write([]byte(l + "\r\n")); err != nil {
				t.Fatal(err)
			}
		}
		_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		out, _ := io.ReadAll(nc)
		return string(out)
	}
	if out := talk("stats"); !strings.Contains(out, "CLIENT_ERROR access denied") || strings.Contains(out, "STAT") {
		t.Fatalf("stats without auth: %q", out)
	}
	if out := talk("auth "+aclUserKey+" "+aclUserSecret, "stats"); !strings.Contains(out, "CLIENT_ERROR access denied") {
		t.Fatalf("stats as non-admin: %q", out)
	}
	if out := talk("auth "+aclAdminKey+" "+aclAdminSecret, "stats", "quit"); !strings.HasPrefix(out, "OK\r\n") || !strings.Contains(out, "STAT acl_denied") {
		t.Fatalf("stats as admin: %q", out)
	}
}

// TestACLNamesrv: the name server takes registrations only from admin
// accounts, keeps a broker name to the account that registered it, and
// refuses unsigned route queries.
func TestACLNamesrv(t *testing.T) {
	dev, _ := startACLDev(t)
	c := dialRaw(t, dev.NamesrvAddr())
	route := func() *protocol.Command {
		return protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil)
	}
	wantDenied(t, "unsigned route query", c.call(route()), "no AccessKey")
	if r := c.call(signed(route(), aclUserKey, aclUserSecret)); r.Code == protocol.NoPermission {
		t.Fatalf("signed route query: %s", r)
	}
	reg := func(ak, sk string) *protocol.Command {
		h := protocol.RegisterBrokerRequestHeader{BrokerName: dev.Broker.cfg.BrokerName, BrokerAddr: "127.0.0.1:1",
			ClusterName: dev.Broker.cfg.BrokerClusterName, HAServerAddr: "127.0.0.1:2", BrokerID: 7}
		body, err := protocol.MarshalBody(protocol.RegisterBrokerBody{})
		if err != nil {
			t.Fatal(err)
		}
		return signed(protocol.NewRequest(protocol.RegisterBroker, h.Encode(), body), ak, sk)
	}
	wantDenied(t, "non-admin register", c.call(reg(aclUserKey, aclUserSecret)), "needs an admin account")
	wantDenied(t, "foreign broker name", c.call(reg(aclOtherAdmin, "adminSecret2")), "registered by another account")
	unreg := func(ak, sk string) *protocol.Command {
		h := protocol.UnregisterBrokerRequestHeader{BrokerName: dev.Broker.cfg.BrokerName, BrokerAddr: dev.BrokerAddr(),
			ClusterName: dev.Broker.cfg.BrokerClusterName, BrokerID: 0}
		return signed(protocol.NewRequest(protocol.UnregisterBroker, h.Encode(), nil), ak, sk)
	}
	wantDenied(t, "foreign unregister", c.call(unreg(aclOtherAdmin, "adminSecret2")), "registered by another account")
	kv := protocol.NewRequest(protocol.PutKVConfig, map[string]string{"namespace": "ns", "key": "k", "value": "v"}, nil)
	wantDenied(t, "non-admin KV put", c.call(signed(kv, aclUserKey, aclUserSecret)), "needs an admin account")
	// The broker's own account may.
	if r := c.call(reg(aclAdminKey, aclAdminSecret)); r.Code != protocol.Success {
		t.Fatalf("own register: %s", r)
	}
	counts := map[string]int64{}
	for _, d := range dev.Namesrv.ACLDenied() {
		counts[d.Reason] += d.N
	}
	if counts[acl.ReasonForeignBroker] != 2 || counts[acl.ReasonNotAdmin] != 2 || counts[acl.ReasonUnsigned] != 1 {
		t.Fatalf("name server refusals: %+v", dev.Namesrv.ACLDenied())
	}
}

// TestACLSlave: a slave with the broker's admin account replicates (HA
// handshake signed, metadata sync signed); one without credentials is
// refused by the master's HA listener, and counted.
func TestACLSlave(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain_acl.yml")
	writeACLFile(t, file, aclTestFile)
	cfg := Config{MappedFileSizeCommitLog: 4 << 20, SlaveSyncInterval: 50 * time.Millisecond}
	cfg.ACLEnable, cfg.ACLFile = true, file
	cfg.AccessKey, cfg.SecretKey = aclAdminKey, aclAdminSecret
	dev, err := startCluster(clusterOptions{Dir: dir, Logger: quietLogger(), Broker: cfg, NamesrvACLFile: file, Slaves: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	slaveIDs := func() map[int64]bool {
		m := map[int64]bool{}
		for _, s := range dev.Broker.repl.Slaves() {
			m[s.BrokerID] = true
		}
		return m
	}
	waitFor(t, func() bool { return slaveIDs()[1] }, "the signed slave connected")
	c := dialRaw(t, dev.BrokerAddr())
	if r := c.call(signed(createTopicReq("aclSlaveTopic", 1), aclAdminKey, aclAdminSecret)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	waitFor(t, func() bool { _, ok := dev.Slaves[0].topics.get("aclSlaveTopic"); return ok }, "the slave copied the topic (signed GET_ALL_TOPIC_CONFIG)")

	bad := slaveConfig(dev.master, dir, 2)
	bad.AccessKey, bad.SecretKey = "", ""
	bad.HAMasterAddress = dev.Broker.repl.HAAddr()
	s, err := startConfigured(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitFor(t, func() bool {
		for _, d := range dev.Broker.acl.denied.Snapshot() {
			if d.Reason == acl.ReasonHAAuth {
				return true
			}
		}
		return false
	}, "the unsigned slave refused by the HA listener")
	if slaveIDs()[2] {
		t.Fatal("the unsigned slave is connected")
	}
}
