package dashboard

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestNewAndClose: a Dashboard needs a Source; Close closes its Admin.
func TestNewAndClose(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a Source")
	}
	d, err := New(Options{Source: &fakeSource{}})
	if err != nil || d.Close() != nil {
		t.Fatalf("without an Admin: %v", err)
	}
	a := &fakeAdmin{}
	d, err = New(Options{Source: &fakeSource{}, Admin: a})
	if err != nil || d.Close() != nil || !a.mu.closed {
		t.Fatalf("Close left the Admin open: %v", err)
	}
}

// TestStaticAssets: the page and its assets are served with their
// headers; anything but GET or HEAD is refused.
func TestStaticAssets(t *testing.T) {
	s := server(t, &fakeSource{}, Options{})
	code, hdr, page := call(t, s, "GET", "/ui/", nil, "")
	if code != 200 || !strings.Contains(string(page), "<title>Samsa dashboard</title>") || !strings.Contains(string(page), "app.js") {
		t.Fatalf("page: %d %.200s", code, page)
	}
	if hdr.Get("X-Frame-Options") != "DENY" || hdr.Get("Cache-Control") != "no-cache" || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("page headers: %v", hdr)
	}
	for _, asset := range []string{"/ui/app.js", "/ui/style.css"} {
		if code, _, body := call(t, s, "GET", asset, nil, ""); code != 200 || len(body) < 100 {
			t.Fatalf("%s: %d, %d bytes", asset, code, len(body))
		}
	}
	if code, _, _ := call(t, s, "HEAD", "/ui/app.js", nil, ""); code != 200 {
		t.Fatalf("HEAD app.js: %d", code)
	}
	if code, _, _ := call(t, s, "GET", "/ui/nothing.js", nil, ""); code != http.StatusNotFound {
		t.Fatalf("a missing asset: %d", code)
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		if code, hdr, _ := call(t, s, m, "/ui/", nil, ""); code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET, HEAD" {
			t.Fatalf("%s /ui/: %d Allow %q", m, code, hdr.Get("Allow"))
		}
	}
	if code, hdr, _ := call(t, s, "GET", "/ui", nil, ""); code != http.StatusMovedPermanently || hdr.Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d to %q", code, hdr.Get("Location"))
	}
}

// TestAPIMethodsAndPaths: every read endpoint answers GET and HEAD,
// refuses the other methods with 405 and a JSON error; an unknown API
// path is a JSON 404.
func TestAPIMethodsAndPaths(t *testing.T) {
	s := server(t, &fakeSource{}, Options{})
	for _, p := range []string{"overview", "cluster", "topics", "topic?topic=t", "groups", "group?group=g", "messages?id=x"} {
		path := "/ui/api/" + p
		if code, hdr, _ := call(t, s, "GET", path, nil, ""); code != 200 || hdr.Get("Content-Type") != "application/json" || hdr.Get("Cache-Control") != "no-store" {
			t.Fatalf("GET %s: %d %v", path, code, hdr)
		}
		if code, _, _ := call(t, s, "HEAD", path, nil, ""); code != 200 {
			t.Fatalf("HEAD %s: %d", path, code)
		}
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			code, hdr, body := call(t, s, m, path, nil, "{}")
			wantError(t, m+" "+path, code, hdr, body, http.StatusMethodNotAllowed)
			if hdr.Get("Allow") != "GET, HEAD" {
				t.Fatalf("%s %s: Allow %q", m, path, hdr.Get("Allow"))
			}
		}
	}
	for _, p := range []string{"/ui/api/", "/ui/api/nothing", "/ui/api/group/nothing", "/ui/api/topics/x"} {
		if msg := getErr(t, s, p, http.StatusNotFound); !strings.Contains(msg, "no such dashboard API") {
			t.Fatalf("%s: %q", p, msg)
		}
	}
}

// TestZeroSource: a Source that answers every view with zero values
// gets empty lists, not nulls, and no endpoint panics.
func TestZeroSource(t *testing.T) {
	s := server(t, &fakeSource{}, Options{})
	for path, want := range map[string][]string{
		"/ui/api/overview":      {`"nameServers":[]`, `"slaves":[]`, `"topics":[]`},
		"/ui/api/topics":        {`[]`},
		"/ui/api/topic?topic=t": {`"queues":[]`, `"groups":[]`},
		"/ui/api/groups":        {`[]`},
		"/ui/api/group?group=g": {`"members":[]`, `"subscriptions":{}`, `"queues":[]`},
		"/ui/api/messages?id=x": {`[]`},
		"/ui/api/cluster":       {`"brokers":[{`, `"self":true`, `"brokerRole":"?"`},
	} {
		var v any
		body := get(t, s, path, &v)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: %s lacks %s", path, body, w)
			}
		}
	}
}

// TestSourceErrors: a Source's error is answered with its status and
// text; one made without NotFound, Invalid, Conflict or Unsupported is
// a 500.
func TestSourceErrors(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
	}{
		{NotFound("no topic %q", "t"), http.StatusNotFound},
		{Invalid("queue %d", 9), http.StatusBadRequest},
		{Conflict("a slave"), http.StatusConflict},
		{Unsupported("index off"), http.StatusNotImplemented},
		{errors.New("disk on fire"), http.StatusInternalServerError},
	} {
		s := server(t, &fakeSource{err: c.err}, Options{})
		for _, p := range []string{"/ui/api/topic?topic=t", "/ui/api/group?group=g", "/ui/api/messages?id=x"} {
			if msg := getErr(t, s, p, c.status); msg != c.err.Error() {
				t.Fatalf("%s with %v: %q", p, c.err, msg)
			}
		}
	}
}

// TestLoopbackListener: only a loopback admin listener lets a reset
// through with ACL off.
func TestLoopbackListener(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8081": true, "[::1]:8081": true, "localhost:8081": true,
		"0.0.0.0:8081": false, "[::]:8081": false, "10.1.2.3:8081": false, "": false, "garbage": false,
	} {
		if got := loopbackListener(addr); got != want {
			t.Errorf("loopbackListener(%q) = %v, want %v", addr, got, want)
		}
	}
}
