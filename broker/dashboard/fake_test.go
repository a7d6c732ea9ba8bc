package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// fakeSource answers with what its fields hold and records what it was
// asked. The zero value answers every view with zero values.
type fakeSource struct {
	overview Overview
	local    LocalBroker
	topics   []Topic
	topic    TopicDetail
	groups   []Group
	group    GroupDetail
	messages []StoredMessage
	reset    ResetAnswer
	err      error // from the methods that return one

	mu struct {
		sync.Mutex
		topic, group string
		queries      []MessageQuery
		resets       []ResetRequest
	}
}

func (f *fakeSource) Overview() Overview { return f.overview }
func (f *fakeSource) Local() LocalBroker { return f.local }
func (f *fakeSource) Topics() []Topic    { return f.topics }
func (f *fakeSource) Groups() []Group    { return f.groups }
func (f *fakeSource) Topic(name string) (TopicDetail, error) {
	f.mu.Lock()
	f.mu.topic = name
	f.mu.Unlock()
	return f.topic, f.err
}

func (f *fakeSource) Group(name string) (GroupDetail, error) {
	f.mu.Lock()
	f.mu.group = name
	f.mu.Unlock()
	return f.group, f.err
}

func (f *fakeSource) Messages(q MessageQuery) ([]StoredMessage, error) {
	f.mu.Lock()
	f.mu.queries = append(f.mu.queries, q)
	f.mu.Unlock()
	return f.messages, f.err
}

func (f *fakeSource) ResetOffsets(r ResetRequest) (ResetAnswer, error) {
	f.mu.Lock()
	f.mu.resets = append(f.mu.resets, r)
	f.mu.Unlock()
	return f.reset, f.err
}

func (f *fakeSource) lastQuery() (MessageQuery, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.mu.queries) == 0 {
		return MessageQuery{}, 0
	}
	return f.mu.queries[len(f.mu.queries)-1], len(f.mu.queries)
}

func (f *fakeSource) resets() []ResetRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ResetRequest(nil), f.mu.resets...)
}

// fakeAdmin is a cluster: a cluster table, each broker's runtime table
// and stats lines (an address missing from runtime does not answer).
type fakeAdmin struct {
	info    *protocol.ClusterInfo
	from    string
	infoErr error
	runtime map[string]map[string]string
	stats   map[string][]protocol.Stat

	mu struct {
		sync.Mutex
		asked  []string // addresses asked for runtime info or stats
		closed bool
	}
}

func (a *fakeAdmin) ClusterInfoFrom(context.Context) (*protocol.ClusterInfo, string, error) {
	if a.infoErr != nil {
		return nil, "", a.infoErr
	}
	return a.info, a.from, nil
}

func (a *fakeAdmin) BrokerRuntimeInfo(_ context.Context, addr string) (map[string]string, error) {
	a.note(addr)
	kv, ok := a.runtime[addr]
	if !ok {
		return nil, errors.New("client: runtime info of " + addr + ": connection refused")
	}
	return kv, nil
}

func (a *fakeAdmin) BrokerStats(_ context.Context, addr string, item ...string) ([]protocol.Stat, error) {
	a.note(addr)
	if len(item) != 1 || item[0] != "ha" {
		return nil, errors.New("the cluster view asks for stats ha only")
	}
	return a.stats[addr], nil
}

func (a *fakeAdmin) Close() error {
	a.mu.Lock()
	a.mu.closed = true
	a.mu.Unlock()
	return nil
}

func (a *fakeAdmin) note(addr string) {
	a.mu.Lock()
	a.mu.asked = append(a.mu.asked, addr)
	a.mu.Unlock()
}

func (a *fakeAdmin) askedOf(addr string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.mu.asked {
		if x == addr {
			return true
		}
	}
	return false
}

// server serves a Dashboard over o (o.Source: src) for the test.
func server(t *testing.T, src Source, o Options) *httptest.Server {
	t.Helper()
	o.Source = src
	if o.ListenAddr == "" {
		o.ListenAddr = "127.0.0.1:8081"
	}
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	d.Register(mux)
	s := httptest.NewServer(mux)
	t.Cleanup(func() {
		s.Close()
		_ = d.Close()
	})
	return s
}

// call sends a request and returns the status, the headers and the body.
func call(t *testing.T, s *httptest.Server, method, path string, hdr map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := s.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// get decodes a 200 answer of GET path into v and returns the raw body.
func get(t *testing.T, s *httptest.Server, path string, v any) string {
	t.Helper()
	code, _, body := call(t, s, "GET", path, nil, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return string(body)
}

// wantError checks an answer is status with a JSON error, and returns
// its text.
func wantError(t *testing.T, what string, code int, hdr http.Header, body []byte, status int) string {
	t.Helper()
	var e struct{ Error string }
	if code != status || json.Unmarshal(body, &e) != nil || e.Error == "" || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("%s: %d %s %q, want %d with a JSON error", what, code, body, hdr.Get("Content-Type"), status)
	}
	return e.Error
}

// getErr wants status from GET path and returns the error text.
func getErr(t *testing.T, s *httptest.Server, path string, status int) string {
	t.Helper()
	code, hdr, body := call(t, s, "GET", path, nil, "")
	return wantError(t, "GET "+path, code, hdr, body, status)
}
