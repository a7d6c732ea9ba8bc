package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

var resetHeaders = map[string]string{"Content-Type": "application/json", MutationHeader: "1"}

// TestResetRefusals: a reset needs POST, the X-Samsa-UI header, a JSON
// body and, with ACL off, a loopback listener; a malformed body or
// request is a 400. None of them reaches the Source.
func TestResetRefusals(t *testing.T) {
	src := &fakeSource{}
	s := server(t, src, Options{})
	good := `{"group":"g","topic":"t","to":"latest"}`
	for _, c := range []struct {
		what   string
		method string
		hdr    map[string]string
		body   string
		status int
		in     string
	}{
		{"GET", "GET", resetHeaders, good, http.StatusMethodNotAllowed, "needs POST"},
		{"PUT", "PUT", resetHeaders, good, http.StatusMethodNotAllowed, "needs POST"},
		{"no header", "POST", map[string]string{"Content-Type": "application/json"}, good, http.StatusForbidden, MutationHeader},
		{"header not 1", "POST", map[string]string{"Content-Type": "application/json", MutationHeader: "yes"}, good, http.StatusForbidden, MutationHeader},
		{"form body", "POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded", MutationHeader: "1"}, good, http.StatusUnsupportedMediaType, "JSON body"},
		{"no content type", "POST", map[string]string{MutationHeader: "1"}, good, http.StatusUnsupportedMediaType, "JSON body"},
		{"empty body", "POST", resetHeaders, "", http.StatusBadRequest, "bad request body"},
		{"bad JSON", "POST", resetHeaders, `{"group":`, http.StatusBadRequest, "bad request body"},
		{"not an object", "POST", resetHeaders, `[1,2]`, http.StatusBadRequest, "bad request body"},
		{"unknown field", "POST", resetHeaders, `{"group":"g","topic":"t","to":"latest","force":true}`, http.StatusBadRequest, "force"},
		{"wrong type", "POST", resetHeaders, `{"group":"g","topic":"t","to":"offset","offset":"5"}`, http.StatusBadRequest, "bad request body"},
		{"two values", "POST", resetHeaders, good + good, http.StatusBadRequest, "more than one"},
		{"huge body", "POST", resetHeaders, `{"group":"` + strings.Repeat("g", resetBodyMax) + `"}`, http.StatusBadRequest, "bad request body"},
		{"no group", "POST", resetHeaders, `{"topic":"t","to":"latest"}`, http.StatusBadRequest, "group and topic are required"},
		{"no topic", "POST", resetHeaders, `{"group":"g","to":"latest"}`, http.StatusBadRequest, "group and topic are required"},
		{"no target", "POST", resetHeaders, `{"group":"g","topic":"t"}`, http.StatusBadRequest, "to: want earliest"},
		{"bad target", "POST", resetHeaders, `{"group":"g","topic":"t","to":"sideways"}`, http.StatusBadRequest, `got "sideways"`},
		{"time without one", "POST", resetHeaders, `{"group":"g","topic":"t","to":"time"}`, http.StatusBadRequest, "timestampMs"},
		{"negative time", "POST", resetHeaders, `{"group":"g","topic":"t","to":"time","timestampMs":-1}`, http.StatusBadRequest, "timestampMs"},
		{"negative offset", "POST", resetHeaders, `{"group":"g","topic":"t","to":"offset","offset":-1}`, http.StatusBadRequest, "offset: -1 is negative"},
	} {
		code, hdr, body := call(t, s, c.method, "/ui/api/group/reset", c.hdr, c.body)
		if msg := wantError(t, c.what, code, hdr, body, c.status); !strings.Contains(msg, c.in) {
			t.Errorf("%s: error %q lacks %q", c.what, msg, c.in)
		}
		if c.status == http.StatusMethodNotAllowed && hdr.Get("Allow") != "POST" {
			t.Errorf("%s: Allow %q", c.what, hdr.Get("Allow"))
		}
	}
	if n := len(src.resets()); n != 0 {
		t.Fatalf("%d refused resets reached the Source", n)
	}

	open := server(t, src, Options{ListenAddr: "0.0.0.0:8081"})
	code, hdr, body := call(t, open, "POST", "/ui/api/group/reset", resetHeaders, good)
	if msg := wantError(t, "ACL off, listener open", code, hdr, body, http.StatusForbidden); !strings.Contains(msg, "loopback") {
		t.Fatalf("ACL off, listener open: %q", msg)
	}
	if n := len(src.resets()); n != 0 {
		t.Fatalf("a reset through an open listener without ACL reached the Source")
	}
}

// TestResetACL: with ACL on, a reset needs an admin account, on any
// listener.
func TestResetACL(t *testing.T) {
	src := &fakeSource{reset: ResetAnswer{Group: "g", Topic: "t"}}
	admin := func(ak, sk string) bool { return ak == "admin" && sk == "secret" }
	s := server(t, src, Options{AdminAccount: admin, ListenAddr: "0.0.0.0:8081"})
	good := `{"group":"g","topic":"t","to":"latest"}`
	for _, c := range []struct {
		what   string
		ak, sk string
	}{{"no account", "", ""}, {"not an admin", "user", "secret"}, {"wrong secret", "admin", "nope"}} {
		hdr := map[string]string{"Content-Type": "application/json", MutationHeader: "1"}
		if c.ak != "" {
			req, _ := http.NewRequest("POST", "/", nil)
			req.SetBasicAuth(c.ak, c.sk)
			hdr["Authorization"] = req.Header.Get("Authorization")
		}
		code, h, body := call(t, s, "POST", "/ui/api/group/reset", hdr, good)
		wantError(t, c.what, code, h, body, http.StatusUnauthorized)
	}
	req, _ := http.NewRequest("POST", "/", nil)
	req.SetBasicAuth("admin", "secret")
	hdr := map[string]string{"Content-Type": "application/json; charset=utf-8", MutationHeader: "1", "Authorization": req.Header.Get("Authorization")}
	if code, _, body := call(t, s, "POST", "/ui/api/group/reset", hdr, good); code != 200 {
		t.Fatalf("admin reset: %d %s", code, body)
	}
	if r := src.resets(); len(r) != 1 || r[0] != (ResetRequest{Group: "g", Topic: "t", To: "latest"}) {
		t.Fatalf("resets reaching the Source: %+v", r)
	}
}

// TestResetAnswers: a well-formed request reaches the Source as sent,
// its answer goes back (queues never null), its refusals keep their
// status.
func TestResetAnswers(t *testing.T) {
	src := &fakeSource{reset: ResetAnswer{Group: "g", Topic: "t", DryRun: true, Queues: []ResetMove{{Queue: 0, From: -1, To: 3}}}}
	s := server(t, src, Options{})
	for _, body := range []string{
		`{"group":"g","topic":"t","to":"earliest","dryRun":true}`,
		`{"group":"g","topic":"t","to":"time","timestampMs":1700000000000}`,
		`{"group":"g","topic":"t","to":"offset","offset":0}`,
	} {
		code, _, data := call(t, s, "POST", "/ui/api/group/reset", resetHeaders, body)
		var ans ResetAnswer
		if code != 200 || json.Unmarshal(data, &ans) != nil || len(ans.Queues) != 1 || ans.Queues[0] != (ResetMove{Queue: 0, From: -1, To: 3}) {
			t.Fatalf("%s: %d %s", body, code, data)
		}
		var want ResetRequest
		_ = json.Unmarshal([]byte(body), &want)
		if r := src.resets(); r[len(r)-1] != want {
			t.Fatalf("%s reached the Source as %+v", body, r[len(r)-1])
		}
	}

	empty := server(t, &fakeSource{}, Options{})
	if _, _, data := call(t, empty, "POST", "/ui/api/group/reset", resetHeaders, `{"group":"g","topic":"t","to":"latest"}`); !strings.Contains(string(data), `"queues":[]`) {
		t.Fatalf("no queues as null: %s", data)
	}
	refusing := server(t, &fakeSource{err: Conflict("group g has 1 member(s) online")}, Options{})
	code, hdr, data := call(t, refusing, "POST", "/ui/api/group/reset", resetHeaders, `{"group":"g","topic":"t","to":"latest"}`)
	if msg := wantError(t, "refused by the Source", code, hdr, data, http.StatusConflict); !strings.Contains(msg, "online") {
		t.Fatalf("refusal: %q", msg)
	}
}
