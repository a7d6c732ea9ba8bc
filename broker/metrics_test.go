package broker

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/samsamq/samsa/internal/testutil"
	"github.com/samsamq/samsa/protocol"
)

// scrapeFamilies parses /metrics.
func scrapeFamilies(t *testing.T, b *Broker) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(scrape(t, b)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// metricValue finds the sample of family name whose labels include want.
func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricNamesDistinct: no two families share a name once a counter's
// _total is dropped (OpenMetrics names a counter by its base: a gauge
// samsa_x beside a counter samsa_x_total collide), and a histogram's
// series names collide with no other family.
func TestMetricNamesDistinct(t *testing.T) {
	b := startBroker(t, "", nil)
	testutil.CleanupClose(t, "broker", b.Close)
	fams := scrapeFamilies(t, b)
	base := map[string]string{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "samsa_") {
			continue // the Go and process collectors' names are theirs
		}
		n := name
		if f.GetType() == dto.MetricType_COUNTER {
			n = strings.TrimSuffix(name, "_total")
		}
		if other, ok := base[n]; ok {
			t.Errorf("families %q and %q share the name %q", other, name, n)
		}
		base[n] = name
	}
	for name, f := range fams {
		if f.GetType() != dto.MetricType_HISTOGRAM && f.GetType() != dto.MetricType_UNTYPED {
			continue
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if other, ok := base[name+suffix]; ok {
				t.Errorf("family %q collides with histogram %q's series", other, name)
			}
		}
	}
	for _, gone := range []string{"samsa_broker_connections", "samsa_broker_longpoll_held", "samsa_store_offset_bytes"} {
		if _, ok := fams[gone]; ok {
			t.Errorf("old name %q still exported", gone)
		}
	}
}

// TestMetricsGroupsRequestsLatencyBuild: per group and queue committed
// offset and lag, answers by request and result, send and pull latency
// histograms, the build info and the disk's used ratio.
func TestMetricsGroupsRequestsLatencyBuild(t *testing.T) {
	b := startBroker(t, "", nil)
	testutil.CleanupClose(t, "broker", b.Close)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("mg", 2))
	for i := 0; i < 5; i++ {
		if r := c.call(sendReq("mg", 1, []byte("x"), nil)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	if r := c.call(batchReq("mg", 3)); r.Code != protocol.Success { // queue 0
		t.Fatal(r)
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset("mg", 1) == 5 && b.store.MaxQueueOffset("mg", 0) == 3 }, "dispatched")
	uh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "mg", QueueID: 1, CommitOffset: 2}
	if r := c.call(protocol.NewRequest(protocol.UpdateConsumerOffset, uh.Encode(), nil)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	if r := c.call(pullReq("g", "mg", 1, 0, 32, 0, "*")); r.Code != protocol.Success {
		t.Fatal(r)
	}
	c.call(pullReq("g", "mg", 1, 5, 32, 0, "*")) // PULL_NOT_FOUND
	// A held pull, answered by an arrival: counted, not timed.
	pending := c.start(pullReq("g", "mg", 0, 3, 32, time.Minute, "*"))
	waitFor(t, func() bool { return b.stats.held.Load() == 1 }, "pull held")
	c.call(sendReq("mg", 0, []byte("wake"), nil))
	select {
	case <-pending:
	case <-time.After(60 * time.Second):
		t.Fatal("held pull not answered")
	}

	fams := scrapeFamilies(t, b)
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"samsa_broker_consumer_offset", map[string]string{"group": "cg", "topic": "mg", "queue": "1"}, 2},
		{"samsa_broker_consumer_lag_messages", map[string]string{"group": "cg", "topic": "mg", "queue": "1"}, 3},
		{"samsa_broker_requests_answered_total", map[string]string{"request": "SEND_MESSAGE", "result": "SUCCESS"}, 6},
		{"samsa_broker_requests_answered_total", map[string]string{"request": "SEND_BATCH_MESSAGE", "result": "SUCCESS"}, 1},
		{"samsa_broker_requests_answered_total", map[string]string{"request": "PULL_MESSAGE", "result": "SUCCESS"}, 2},
		{"samsa_broker_requests_answered_total", map[string]string{"request": "PULL_MESSAGE", "result": "PULL_NOT_FOUND"}, 1},
		{"samsa_broker_requests_answered_total", map[string]string{"request": "UPDATE_CONSUMER_OFFSET", "result": "SUCCESS"}, 1},
		{"samsa_broker_send_latency_seconds", nil, 7},
		{"samsa_broker_pull_latency_seconds", nil, 2},
		{"samsa_build_info", map[string]string{"version": DefaultVersion}, 1},
		{"samsa_broker_connections_open", nil, 1},
	}
	for _, ck := range checks {
		got, ok := metricValue(t, fams, ck.name, ck.labels)
		if !ok || got != ck.want {
			t.Errorf("%s%v = %v (found %v), want %v", ck.name, ck.labels, got, ok, ck.want)
		}
	}
	if f := fams["samsa_broker_send_latency_seconds"]; f == nil || len(f.GetMetric()[0].GetHistogram().GetBucket()) < len(latencyBuckets) {
		t.Errorf("send latency histogram: %v", f)
	}
	if r, ok := metricValue(t, fams, "samsa_store_disk_used_ratio", nil); !ok || r < 0 || r > 1 {
		t.Errorf("disk used ratio %v (found %v)", r, ok)
	}
	for _, n := range []string{"samsa_store_written_offset_bytes", "samsa_store_durable_offset_bytes",
		"samsa_store_dispatched_offset_bytes", "samsa_store_min_offset_bytes"} {
		// Written and dispatched moved; durable may lag (async flush).
		if v, ok := metricValue(t, fams, n, nil); !ok || ((n == "samsa_store_written_offset_bytes" || n == "samsa_store_dispatched_offset_bytes") && v <= 0) {
			t.Errorf("%s = %v (found %v)", n, v, ok)
		}
	}
}

// TestHealthAndReady: /healthz answers ok; /readyz is 200 while the broker
// runs and 503 with the reason while it closes.
func TestHealthAndReady(t *testing.T) {
	b := startBroker(t, "", nil)
	testutil.CleanupClose(t, "broker", b.Close)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + b.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || !strings.HasPrefix(body, "ready") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	if ready, why := b.readiness(); !ready {
		t.Fatalf("readiness: %s", why)
	}
	b.closing.Store(true)
	code, body := get("/readyz")
	b.closing.Store(false)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "closing") {
		t.Fatalf("/readyz while closing: %d %q", code, body)
	}
}

// TestRequestMetricsZeroAllocs: counting and timing a send, once its row
// exists, allocates nothing (the send path stays allocation-free).
func TestRequestMetricsZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var m reqMetrics
	resp := &protocol.Command{Code: protocol.Success}
	m.done(protocol.SendMessage, resp, time.Now()) // the row
	m.result(protocol.PullMessage, protocol.PullNotFound)
	start := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		m.done(protocol.SendMessage, resp, start)
		m.done(protocol.PullMessage, nil, start)
		m.result(protocol.PullMessage, protocol.PullNotFound)
		m.done(protocol.SendMessage, held, start)
	}); n != 0 {
		t.Fatalf("%v allocations a request", n)
	}
	// AllocsPerRun runs the function once more than asked, as a warm-up.
	if got := m.row(protocol.SendMessage)[protocol.Success].Load(); got != 1002 {
		t.Fatalf("counted %d sends", got)
	}
	if m.send.count.Load() != 1002 || m.pull.count.Load() != 1001 {
		t.Fatalf("timed %d sends, %d pulls", m.send.count.Load(), m.pull.count.Load())
	}
}

// TestDashboardNamesExported: every samsa_ metric the Grafana dashboard
// (deploy/grafana/samsa.json) queries is one the broker describes, so a
// rename cannot leave a panel empty.
func TestDashboardNamesExported(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "samsa.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	described := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([a-z_:]+)"`)
	for _, d := range allDescs {
		if m := fq.FindStringSubmatch(d.d.String()); m != nil {
			described[m[1]] = true
		}
	}
	name := regexp.MustCompile(`samsa_[a-z_]+`)
	used := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				used++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
				if !described[base] {
					t.Errorf("panel %q queries %s, which the broker does not export", p.Title, n)
				}
			}
		}
	}
	if used < 20 {
		t.Fatalf("the dashboard queries only %d samsa_ series", used)
	}
}
