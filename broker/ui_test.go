package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

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

func (c *uiClient) reset(r uiResetRequest) (int, []byte) {
	c.t.Helper()
	body, _ := json.Marshal(r)
	return c.do("POST", "/ui/api/group/reset", map[string]string{"Content-Type": "application/json", uiMutationHeader: "1"}, body)
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

// TestUIReadAPI: the page and its assets are served; the overview,
// topics, topic, groups, group and message search answer this broker's
// state; bad input gets a 4xx with a clear error.
func TestUIReadAPI(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	uiFixture(t, b, func(c *protocol.Command) *protocol.Command { return c })
	c := newUIClient(t, b)

	code, page := c.do("GET", "/ui/", nil, nil)
	if code != 200 || !strings.Contains(string(page), "<title>Samsa dashboard</title>") || !strings.Contains(string(page), "app.js") {
		t.Fatalf("page: %d %.200s", code, page)
	}
	for _, asset := range []string{"/ui/app.js", "/ui/style.css"} {
		if code, body := c.do("GET", asset, nil, nil); code != 200 || len(body) < 100 {
			t.Fatalf("%s: %d, %d bytes", asset, code, len(body))
		}
	}
	if code, _ := c.do("POST", "/ui/", nil, nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /ui/: %d", code)
	}
	if code, _ := c.do("POST", "/ui/api/topics", nil, nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /ui/api/topics: %d", code)
	}
	c.getErr("/ui/api/nothing", http.StatusNotFound)

	var o uiOverview
	uiWaitFor(t, "the overview to count 3 puts", func() bool { c.get("/ui/api/overview", &o); return o.PutTotal == 3 })
	if o.BrokerName != b.Config().BrokerName || o.Addr != b.Addr() || len(o.Topics) != 1 || o.Topics[0].Topic != "ui-t" || o.Topics[0].Puts != 3 {
		t.Fatalf("overview: %+v", o)
	}

	var cl uiCluster
	c.get("/ui/api/cluster", &cl)
	if len(cl.Brokers) != 1 || !cl.Brokers[0].Self || cl.Brokers[0].Broker != b.Config().BrokerName || cl.Brokers[0].Role != "master" ||
		cl.Brokers[0].BrokerRole != string(b.Config().BrokerRole) || !strings.Contains(cl.Source, "no name server") {
		t.Fatalf("cluster without a name server: %+v", cl)
	}

	var topics []uiTopic
	c.get("/ui/api/topics", &topics)
	var ut *uiTopic
	for i := range topics {
		if topics[i].Topic == "ui-t" {
			ut = &topics[i]
		}
	}
	if ut == nil || ut.ReadQueues != 2 || ut.Messages != 3 || ut.Puts != 3 {
		t.Fatalf("topics: %+v", topics)
	}
	var td uiTopicDetail
	c.get("/ui/api/topic?topic=ui-t", &td)
	if len(td.Queues) != 2 || td.Queues[1].MaxOffset != 3 || td.Queues[1].LastStoreTime == 0 || td.Queues[0].MaxOffset != 0 ||
		len(td.Groups) != 1 || td.Groups[0] != "ui-g" {
		t.Fatalf("topic: %+v", td)
	}
	c.getErr("/ui/api/topic", http.StatusBadRequest)
	c.getErr("/ui/api/topic?topic=nope", http.StatusNotFound)

	var groups []uiGroup
	c.get("/ui/api/groups", &groups)
	found := false
	for _, g := range groups {
		if g.Group == "ui-g" {
			found = true
			if g.Lag != 2 || g.Members != 0 || len(g.Topics) != 1 {
				t.Fatalf("group row: %+v", g)
			}
		}
	}
	if !found {
		t.Fatalf("groups: %+v", groups)
	}
	var gd uiGroupDetail
	c.get("/ui/api/group?group=ui-g", &gd)
	if gd.Lag != 2 || len(gd.Queues) != 2 || gd.Queues[1].Committed != 1 || gd.Queues[1].Lag != 2 || gd.Queues[1].LastConsumed == 0 {
		t.Fatalf("group: %+v", gd)
	}
	c.getErr("/ui/api/group?group=nobody-here", http.StatusNotFound)

	var ms []uiMessage
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
	for path, status := range map[string]int{
		"/ui/api/messages":                                  http.StatusBadRequest,
		"/ui/api/messages?key=k1":                           http.StatusBadRequest,
		"/ui/api/messages?topic=ui-t&key=none":              http.StatusNotFound,
		"/ui/api/messages?id=nosuchid":                      http.StatusNotFound,
		"/ui/api/messages?topic=ui-t&queue=5&offset=0":      http.StatusBadRequest,
		"/ui/api/messages?topic=ui-t&queue=1&offset=9":      http.StatusNotFound,
		"/ui/api/messages?topic=ui-t&queue=1&offset=x":      http.StatusBadRequest,
		"/ui/api/messages?topic=ui-t&queue=1&offset=0&n=99": http.StatusBadRequest,
		"/ui/api/messages?topic=nope&queue=0&offset=0":      http.StatusNotFound,
	} {
		c.getErr(path, status)
	}
}

// TestUIResetOffsets: the reset needs POST, the X-Samsa-UI header and a
// JSON body; a dry run changes nothing; each target moves the offsets;
// bad input is refused and loses nothing.
func TestUIResetOffsets(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	uiFixture(t, b, func(c *protocol.Command) *protocol.Command { return c })
	c := newUIClient(t, b)
	committed := func(q int32) int64 { off, _ := b.offsets.query("ui-g", "ui-t", q); return off }

	if code, _ := c.do("GET", "/ui/api/group/reset?group=ui-g&topic=ui-t&to=earliest", nil, nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET reset: %d", code)
	}
	body := []byte(`{"group":"ui-g","topic":"ui-t","to":"latest"}`)
	if code, _ := c.do("POST", "/ui/api/group/reset", map[string]string{"Content-Type": "application/json"}, body); code != http.StatusForbidden {
		t.Fatalf("reset without the header: %d", code)
	}
	if code, _ := c.do("POST", "/ui/api/group/reset", map[string]string{uiMutationHeader: "1", "Content-Type": "application/x-www-form-urlencoded"}, body); code != http.StatusUnsupportedMediaType {
		t.Fatalf("reset with a form body: %d", code)
	}
	for _, bad := range []uiResetRequest{
		{Group: "ui-g", Topic: "ui-t", To: "sideways"},
		{Group: "ui-g", Topic: "ui-t", To: "time"},
		{Group: "ui-g", Topic: "ui-t", To: "offset", Offset: -1},
		{Group: "", Topic: "ui-t", To: "latest"},
	} {
		if code, msg := c.reset(bad); code != http.StatusBadRequest {
			t.Fatalf("reset %+v: %d %s", bad, code, msg)
		}
	}
	if code, msg := c.reset(uiResetRequest{Group: "ui-g", Topic: "nope", To: "latest"}); code != http.StatusNotFound {
		t.Fatalf("reset of an unknown topic: %d %s", code, msg)
	}
	if committed(0) != 0 || committed(1) != 1 {
		t.Fatalf("refused resets moved offsets: %d %d", committed(0), committed(1))
	}

	var ans uiResetAnswer
	code, data := c.reset(uiResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest", DryRun: true})
	if code != 200 || json.Unmarshal(data, &ans) != nil || len(ans.Queues) != 2 || ans.Queues[1] != (uiReset{Queue: 1, From: 1, To: 3}) {
		t.Fatalf("dry run: %d %s", code, data)
	}
	if committed(1) != 1 {
		t.Fatalf("a dry run moved the offset to %d", committed(1))
	}
	for _, step := range []struct {
		req  uiResetRequest
		want int64 // queue 1's offset after
	}{
		{uiResetRequest{To: "latest"}, 3},
		{uiResetRequest{To: "earliest"}, 0},
		{uiResetRequest{To: "offset", Offset: 2}, 2},
		{uiResetRequest{To: "offset", Offset: 99}, 3}, // kept within the queue
		{uiResetRequest{To: "time", TimestampMs: time.Now().Add(-time.Hour).UnixMilli()}, 0},
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
	var gd uiGroupDetail
	c.get("/ui/api/group?group=ui-g", &gd)
	if len(gd.Members) != 1 || gd.Members[0].ClientID != "ui-cid" || gd.Subscriptions["ui-t"] == "" {
		t.Fatalf("group with a member: %+v", gd)
	}
	if code, data := c.reset(uiResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest", DryRun: true}); code != 200 {
		t.Fatalf("preview with a member online: %d %s", code, data)
	}
	if code, data := c.reset(uiResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != http.StatusConflict || !strings.Contains(string(data), "online") {
		t.Fatalf("reset with a member online: %d %s", code, data)
	}
	if got := committed(1); got != 0 {
		t.Fatalf("a refused reset moved queue 1 to %d", got)
	}
}

// TestUIClusterAndACL: with a name server and a slave, the cluster view
// lists both brokers with their roles and the slave's replication state;
// with ACL on, the dashboard needs an admin account, and so does a reset.
func TestUIClusterAndACL(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain_acl.yml")
	writeACLFile(t, file, aclTestFile)
	cfg := Config{MappedFileSizeCommitLog: 4 << 20, AdminListen: "127.0.0.1:0", BrokerRole: "ASYNC_MASTER"}
	cfg.ACLEnable, cfg.ACLFile = true, file
	cfg.AccessKey, cfg.SecretKey = aclAdminKey, aclAdminSecret
	dev, err := StartDev(DevOptions{Dir: filepath.Join(dir, "store"), Logger: quietLogger(), Broker: cfg, NamesrvACLFile: file, Slaves: 1})
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
	if code, _ := c.reset(uiResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != http.StatusUnauthorized {
		t.Fatalf("reset with a non-admin account: %d", code)
	}
	c.ak, c.sk = aclAdminKey, aclAdminSecret
	if code, data := c.reset(uiResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != 200 {
		t.Fatalf("reset with an admin account: %d %s", code, data)
	}

	var cl uiCluster
	uiWaitFor(t, "the cluster view to show the slave in sync", func() bool {
		c.get("/ui/api/cluster", &cl)
		return len(cl.Brokers) == 2 && cl.Brokers[1].Slave != nil && cl.Brokers[1].Slave.InSync
	})
	m, s := cl.Brokers[0], cl.Brokers[1]
	if !m.Self || m.Role != "master" || m.BrokerRole != "ASYNC_MASTER" || m.Addr != b.Addr() || !strings.Contains(cl.Source, dev.NamesrvAddr()) ||
		s.Self || s.Role != "slave" || s.BrokerRole != "SLAVE" || s.Addr != dev.Slaves[0].Addr() || s.Error != "" || s.Version == "" {
		t.Fatalf("cluster: %+v", cl)
	}
	// The slave's own dashboard sees the same cluster, and refuses a reset.
	sc := newUIClient(t, dev.Slaves[0])
	sc.ak, sc.sk = aclAdminKey, aclAdminSecret
	var scl uiCluster
	sc.get("/ui/api/cluster", &scl)
	if len(scl.Brokers) != 2 || !scl.Brokers[1].Self || scl.Brokers[0].Self {
		t.Fatalf("cluster from the slave: %+v", scl)
	}
	if code, data := sc.reset(uiResetRequest{Group: "ui-g", Topic: "ui-t", To: "latest"}); code != http.StatusConflict {
		t.Fatalf("reset on a slave: %d %s", code, data)
	}

}
