package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/dashboard"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

// clientAdmin is the dashboard's Admin as cmd/samsa makes it: the Go
// client's admin API.
func clientAdmin(o dashboard.AdminOptions) (dashboard.Admin, error) {
	a, err := client.NewAdmin(client.ClientOptions{NameServers: o.NameServers, TLS: o.TLS,
		Credentials:    client.Credentials{AccessKey: o.AccessKey, SecretKey: o.SecretKey},
		RequestTimeout: o.Timeout, DialTimeout: o.Timeout, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// uiClient calls a broker's dashboard API.
type uiClient struct {
	t        *testing.T
	base     string
	ak, sk   string // basic auth when set
	http     *http.Client
	lastCode int
}

func newUIClient(t *testing.T, b *Broker) *uiClient {
	if b.AdminAddr() == "" {
		t.Fatal("the broker has no admin listener")
	}
	return &uiClient{t: t, base: "http://" + b.AdminAddr(), http: &http.Client{Timeout: 30 * time.Second}}
}

// do sends a request and returns the status and body.
func (c *uiClient) do(method, path string, hdr map[string]string, body []byte) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if c.ak != "" {
		req.SetBasicAuth(c.ak, c.sk)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	c.lastCode = resp.StatusCode
	return resp.StatusCode, data
}

// get decodes a 200 answer of GET path into v.
func (c *uiClient) get(path string, v any) {
	c.t.Helper()
	code, body := c.do("GET", path, nil, nil)
	if code != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		c.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// getErr wants status from GET path and returns the error text.
func (c *uiClient) getErr(path string, status int) string {
	c.t.Helper()
	code, body := c.do("GET", path, nil, nil)
	var e struct{ Error string }
	if code != status || json.Unmarshal(body, &e) != nil || e.Error == "" {
		c.t.Fatalf("GET %s: %d %s, want %d with an error", path, code, body, status)
	}
	return e.Error
}

func (c *uiClient) reset(r dashboard.ResetRequest) (int, []byte) {
	c.t.Helper()
	body, _ := json.Marshal(r)
	return c.do("POST", "/ui/api/group/reset", map[string]string{"Content-Type": "application/json", dashboard.MutationHeader: "1"}, body)
}

// uiFixture fills a broker: topic ui-t (2 queues) with 3 messages in
// queue 1 (keys k0..k2, producer ids uniq0..uniq2), and group ui-g's
// offset 1 on both queues.
func uiFixture(t *testing.T, b *Broker, sign func(*protocol.Command) *protocol.Command) {
	c := dialRaw(t, b.Addr())
	if r := c.call(sign(createTopicReq("ui-t", 2))); r.Code != protocol.Success {
		t.Fatalf("create: %s", r)
	}
	for i := range 3 {
		props := map[string]string{"KEYS": fmt.Sprintf("k%d", i), "UNIQ_KEY": fmt.Sprintf("uniq%d", i), "TAGS": "tagA"}
		if r := c.call(sign(sendReq("ui-t", 1, []byte(fmt.Sprintf("hello %d", i)), props))); r.Code != protocol.Success {
			t.Fatalf("send: %s", r)
		}
	}
	uiWaitFor(t, "the messages to reach the queue", func() bool { return b.store.MaxQueueOffset("ui-t", 1) == 3 })
	for q := int32(0); q < 2; q++ {
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "ui-g", Topic: "ui-t", QueueID: q, CommitOffset: min(int64(q), 1)}
		if r := c.call(sign(protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil))); r.Code != protocol.Success {
			t.Fatalf("commit: %s", r)
		}
	}
}

// uiWaitFor polls cond up to 30 s.
func uiWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDashboardSourceReadAPI: the page and its API are mounted on the
// admin listener, and the views answer this broker's state: overview,
// cluster (no name server: this broker alone), topics, topic, groups,
// group, and the message searches; what the broker's state refuses (an
// unknown topic or group, a queue the topic lacks, an offset past the
// queue) gets its 4xx. The HTTP side's own checks are package
// dashboard's tests.
func TestDashboardSourceReadAPI(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	uiFixture(t, b, func(c *protocol.Command) *protocol.Command { return c })
	c := newUIClient(t, b)

	code, page := c.do("GET", "/ui/", nil, nil)
	if code != 200 || !strings.Contains(string(page), "<title>Samsa dashboard</title>") || !strings.Contains(string(page), "app.js") {
		t.Fatalf("page: %d %.200s", code, page)
	}
	c.getErr("/ui/api/nothing", http.StatusNotFound)

	var o dashboard.Overview
	uiWaitFor(t, "the overview to count 3 puts", func() bool { c.get("/ui/api/overview", &o); return o.PutTotal == 3 })
	if o.BrokerName != b.Config().BrokerName || o.Addr != b.Addr() || len(o.Topics) != 1 || o.Topics[0].Topic != "ui-t" || o.Topics[0].Puts != 3 ||
		o.Role != string(b.Config().BrokerRole) || o.Written == 0 || o.Slaves == nil || o.NameServers == nil {
		t.Fatalf("overview: %+v", o)
	}

	var cl dashboard.ClusterView
	c.get("/ui/api/cluster", &cl)
	if len(cl.Brokers) != 1 || !cl.Brokers[0].Self || cl.Brokers[0].Broker != b.Config().BrokerName || cl.Brokers[0].Role != "master" ||
		cl.Brokers[0].BrokerRole != string(b.Config().BrokerRole) || cl.Brokers[0].Written == nil || !strings.Contains(cl.Source, "no name server") {
		t.Fatalf("cluster without a name server: %+v", cl)
	}

	var topics []dashboard.Topic
	c.get("/ui/api/topics", &topics)
	var ut *dashboard.Topic
	for i := range topics {
		if topics[i].Name == "ui-t" {
			ut = &topics[i]
		}
	}
	if ut == nil || ut.ReadQueues != 2 || ut.Messages != 3 || ut.Puts != 3 {
		t.Fatalf("topics: %+v", topics)
	}
	var td dashboard.TopicDetail
	c.get("/ui/api/topic?topic=ui-t", &td)
	if len(td.Queues) != 2 || td.Queues[1].MaxOffset != 3 || td.Queues[1].LastStoreTime == 0 || td.Queues[0].MaxOffset != 0 ||
		len(td.Groups) != 1 || td.Groups[0] != "ui-g" || td.Messages != 3 || td.Puts != 3 {
		t.Fatalf("topic: %+v", td)
	}
	c.getErr("/ui/api/topic?topic=nope", http.StatusNotFound)

	var groups []dashboard.Group
	c.get("/ui/api/groups", &groups)
	found := false
	for _, g := range groups {
		if g.Name == "ui-g" {
			found = true
			if g.Lag != 2 || g.Members != 0 || len(g.Topics) != 1 {
				t.Fatalf("group row: %+v", g)
			}
		}
	}
	if !found {
		t.Fatalf("groups: %+v", groups)
	}
	var gd dashboard.GroupDetail
	c.get("/ui/api/group?group=ui-g", &gd)
	if gd.Lag != 2 || len(gd.Queues) != 2 || gd.Queues[1].Committed != 1 || gd.Queues[1].Lag != 2 || gd.Queues[1].LastConsumed == 0 {
		t.Fatalf("group: %+v", gd)
	}
	c.getErr("/ui/api/group?group=nobody-here", http.StatusNotFound)

	var ms []dashboard.Message
	c.get("/ui/api/messages?topic=ui-t&queue=1&offset=1&n=5", &ms)
	if len(ms) != 2 || ms[0].Body != "hello 1" || ms[0].QueueOffset != 1 || ms[0].Keys != "k1" || ms[0].Tags != "tagA" || ms[1].UniqKey != "uniq2" {
		t.Fatalf("by offset: %+v", ms)
	}
	offsetID := ms[0].MsgID
	c.get("/ui/api/messages?id="+offsetID, &ms)
	if len(ms) != 1 || ms[0].Body != "hello 1" {
		t.Fatalf("by offset id %s: %+v", offsetID, ms)
	}
	c.get("/ui/api/messages?topic=ui-t&key=k2", &ms)
	if len(ms) != 1 || ms[0].Body != "hello 2" {
		t.Fatalf("by key: %+v", ms)
	}
	c.get("/ui/api/messages?id=uniq0", &ms)
	if len(ms) != 1 || ms[0].Body != "hello 0" {
		t.Fatalf("by producer id: %+v", ms)
	}
	c.get("/ui/api/messages?topic=ui-t&id=uniq1", &ms)
	if len(ms) != 1 || ms[0].Body != "hello 1" {
		t.Fatalf("by producer id in a topic: %+v", ms)
	}
	for path, status := range map[string]int{
		"/ui/api/messages?topic=ui-t&key=none":         http.StatusNotFound,
		"/ui/api/messages?id=nosuchid":                 http.StatusNotFound,
		"/ui/api/messages?topic=nope&id=uniq0":         http.StatusNotFound,
		"/ui/api/messages?topic=ui-t&queue=5&offset=0": http.StatusBadRequest,
		"/ui/api/messages?topic=ui-t&queue=1&offset=9": http.StatusNotFound,
		"/ui/api/messages?topic=nope&queue=0&offset=0": http.StatusNotFound,
	} {
		c.getErr(path, status)
	}
}

// TestDashboardSourceResetOffsets: a dry run changes nothing; each
// target moves the offsets; an unknown topic is refused and moves
// nothing; with a member online the preview answers and the reset is
// refused.
func TestDashboardSourceResetOffsets(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	uiFixture(t, b, func(c *protocol.Command) *protocol.Command { return c })
	c := newUIClient(t, b)
	committed := func(q int32) int64 { off, _ := b.offsets.Query("ui-g", "ui-t", q); return off }

	for _, bad := range []struct {
		req    dashboard.ResetRequest
		status int
	}{
		{dashboard.ResetRequest{Group: "ui-g", Topic: "nope", To: "latest"}, http.StatusNotFound},
		{dashboard.ResetRequest{Group: "ui g", Topic: "ui-t", To: "latest"}, http.StatusBadRequest},
		{dashboard.ResetRequest{Group: "ui-g", Topic: "ui-t", To: "sideways"}, http.StatusBadRequest},
	} {
		if code, msg := c.reset(bad.req); code != bad.status {
			t.Fatalf("reset %+v: %d %s, want %d", bad.req, code, msg, bad.status)
		}
	}
	if committed(0) != 0 || committed(1) != 1 {
		t.Fatalf("refused resets moved offsets: %d %d", committed(0), committed(1))
	}

	var ans dashboard.ResetAnswer
	code, data := c.reset(dashboard.ResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest", DryRun: true})
	if code != 200 || json.Unmarshal(data, &ans) != nil || len(ans.Queues) != 2 || ans.Queues[1] != (dashboard.ResetMove{Queue: 1, From: 1, To: 3}) ||
		ans.Queues[0] != (dashboard.ResetMove{Queue: 0, From: 0, To: 0}) || !ans.DryRun {
		t.Fatalf("dry run: %d %s", code, data)
	}
	if committed(1) != 1 {
		t.Fatalf("a dry run moved the offset to %d", committed(1))
	}
	for _, step := range []struct {
		req  dashboard.ResetRequest
		want int64 // queue 1's offset after
	}{
		{dashboard.ResetRequest{To: "latest"}, 3},
		{dashboard.ResetRequest{To: "earliest"}, 0},
		{dashboard.ResetRequest{To: "offset", Offset: 2}, 2},
		{dashboard.ResetRequest{To: "offset", Offset: 99}, 3}, // kept within the queue
		{dashboard.ResetRequest{To: "time", TimestampMs: time.Now().Add(-time.Hour).UnixMilli()}, 0},
	} {
		step.req.Group, step.req.Topic = "ui-g", "ui-t"
		if code, data := c.reset(step.req); code != 200 {
			t.Fatalf("reset %+v: %d %s", step.req, code, data)
		}
		if got := committed(1); got != step.want {
			t.Fatalf("reset %+v: queue 1 at %d, want %d", step.req, got, step.want)
		}
	}
	// A member online: the preview answers, the reset is refused.
	hc := dialRaw(t, b.Addr())
	if r := hc.call(heartbeatReq(t, "ui-cid", "ui-g", "ui-t")); r.Code != protocol.Success {
		t.Fatalf("heartbeat: %s", r)
	}
	var gd dashboard.GroupDetail
	c.get("/ui/api/group?group=ui-g", &gd)
	if len(gd.Members) != 1 || gd.Members[0].ClientID != "ui-cid" || gd.Subscriptions["ui-t"] == "" {
		t.Fatalf("group with a member: %+v", gd)
	}
	if code, data := c.reset(dashboard.ResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest", DryRun: true}); code != 200 {
		t.Fatalf("preview with a member online: %d %s", code, data)
	}
	if code, data := c.reset(dashboard.ResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != http.StatusConflict || !strings.Contains(string(data), "online") {
		t.Fatalf("reset with a member online: %d %s", code, data)
	}
	if got := committed(1); got != 0 {
		t.Fatalf("a refused reset moved queue 1 to %d", got)
	}
}

// TestDashboardClusterAndACL: with a name server and a slave, the
// cluster view (through Config.DashboardAdmin, signed with the broker's
// account) lists both brokers with their roles and the slave's
// replication state; with ACL on, the dashboard needs an admin account,
// and so does a reset; a slave refuses a reset.
func TestDashboardClusterAndACL(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain_acl.yml")
	writeACLFile(t, file, aclTestFile)
	cfg := Config{MappedFileSizeCommitLog: 4 << 20, AdminListen: "127.0.0.1:0", BrokerRole: "ASYNC_MASTER", DashboardAdmin: clientAdmin}
	cfg.ACLEnable, cfg.ACLFile = true, file
	cfg.AccessKey, cfg.SecretKey = aclAdminKey, aclAdminSecret
	dev, err := startCluster(clusterOptions{Dir: filepath.Join(dir, "store"), Logger: quietLogger(), Broker: cfg, NamesrvACLFile: file, Slaves: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	b := dev.Broker
	uiFixture(t, b, func(c *protocol.Command) *protocol.Command { return signed(c, aclAdminKey, aclAdminSecret) })
	c := newUIClient(t, b)

	if code, _ := c.do("GET", "/ui/", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("page without an account: %d", code)
	}
	c.ak, c.sk = aclUserKey, aclUserSecret
	if code, _ := c.do("GET", "/ui/api/overview", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("API with a non-admin account: %d", code)
	}
	if code, _ := c.reset(dashboard.ResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != http.StatusUnauthorized {
		t.Fatalf("reset with a non-admin account: %d", code)
	}
	c.ak, c.sk = aclAdminKey, aclAdminSecret
	if code, data := c.reset(dashboard.ResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != 200 {
		t.Fatalf("reset with an admin account: %d %s", code, data)
	}

	var cl dashboard.ClusterView
	uiWaitFor(t, "the cluster view to show the slave in sync", func() bool {
		c.get("/ui/api/cluster", &cl)
		return len(cl.Brokers) == 2 && cl.Brokers[1].Slave != nil && cl.Brokers[1].Slave.InSync
	})
	m, s := cl.Brokers[0], cl.Brokers[1]
	if !m.Self || m.Role != "master" || m.BrokerRole != "ASYNC_MASTER" || m.Addr != b.Addr() || cl.Source != "name server "+dev.NamesrvAddr() ||
		s.Self || s.Role != "slave" || s.BrokerRole != "SLAVE" || s.Addr != dev.Slaves[0].Addr() || s.Error != "" || s.Version == "" {
		t.Fatalf("cluster: %+v", cl)
	}
	// The slave's own dashboard sees the same cluster, its master's slave
	// lines read over the text stats with the broker's account.
	sc := newUIClient(t, dev.Slaves[0])
	sc.ak, sc.sk = aclAdminKey, aclAdminSecret
	var scl dashboard.ClusterView
	uiWaitFor(t, "the slave's cluster view to show its replication", func() bool {
		sc.get("/ui/api/cluster", &scl)
		return len(scl.Brokers) == 2 && scl.Brokers[1].Slave != nil
	})
	if !scl.Brokers[1].Self || scl.Brokers[0].Self || scl.Brokers[0].Error != "" {
		t.Fatalf("cluster from the slave: %+v", scl)
	}
	if code, data := sc.reset(dashboard.ResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != http.StatusConflict {
		t.Fatalf("reset on a slave: %d %s", code, data)
	}
}

// TestDashboardClusterNameServerDown: with its name server unreachable,
// the cluster view answers 502 naming it; the broker's own views still
// answer. Without a DashboardAdmin the view is this broker alone, and
// says why.
func TestDashboardClusterNameServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	b := startBroker(t, "", func(c *Config) { c.NamesrvAddrs, c.DashboardAdmin = []string{dead}, clientAdmin })
	defer b.Close()
	u := newUIClient(t, b)
	if msg := u.getErr("/ui/api/cluster", http.StatusBadGateway); !strings.Contains(msg, "name server "+dead) {
		t.Fatalf("cluster error %q does not name the name server", msg)
	}
	var o dashboard.Overview
	u.get("/ui/api/overview", &o)
	if o.BrokerName != b.Config().BrokerName || len(o.NameServers) != 1 || o.NameServers[0] != dead {
		t.Fatalf("overview: %+v", o)
	}

	alone := startBroker(t, "", func(c *Config) { c.NamesrvAddrs = []string{dead} })
	defer alone.Close()
	var cl dashboard.ClusterView
	newUIClient(t, alone).get("/ui/api/cluster", &cl)
	if len(cl.Brokers) != 1 || !cl.Brokers[0].Self || !strings.Contains(cl.Source, "without a client") {
		t.Fatalf("cluster without a DashboardAdmin: %+v", cl)
	}
}
