package dashboard

import (
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestMessageQueries: each form of search reaches the Source as its
// query; a malformed one is a 400 that names what is wrong and never
// reaches the Source.
func TestMessageQueries(t *testing.T) {
	src := &fakeSource{messages: []StoredMessage{{Topic: "t", Body: []byte("x")}}}
	s := server(t, src, Options{})
	for query, want := range map[string]MessageQuery{
		"id=abc":                        {ID: "abc"},
		"id=%20abc%20&topic=t":          {ID: "abc", Topic: "t"},
		"id=abc&key=k&topic=t":          {ID: "abc", Topic: "t"}, // the id wins
		"topic=t&key=k%201":             {Topic: "t", Key: "k 1"},
		"topic=t&queue=1&offset=2":      {Topic: "t", Queue: 1, Offset: 2, N: 1},
		"topic=t&queue=0&offset=0&n=32": {Topic: "t", N: 32},
		"topic=t&queue=2147483647&offset=9223372036854775807&n=1": {Topic: "t", Queue: math.MaxInt32, Offset: math.MaxInt64, N: 1},
	} {
		var ms []Message
		get(t, s, "/ui/api/messages?"+query, &ms)
		got, _ := src.lastQuery()
		if got != want || len(ms) != 1 {
			t.Errorf("%s: asked %+v, want %+v (%d messages)", query, got, want, len(ms))
		}
	}
	_, before := src.lastQuery()
	for query, wantIn := range map[string]string{
		"":                                  "search by id",
		"id=%20%20":                         "search by id",
		"key=k":                             "needs the topic",
		"queue=0&offset=0":                  "needs the topic",
		"topic=t&queue=0":                   "offset is required",
		"topic=t&offset=0":                  "queue",
		"topic=t&queue=-1&offset=0":         "queue",
		"topic=t&queue=2147483648&offset=0": "queue",
		"topic=t&queue=x&offset=0":          `queue: "x" is not an integer`,
		"topic=t&queue=0&offset=x":          `offset: "x" is not an integer`,
		"topic=t&queue=0&offset=-1":         "offset is required",
		"topic=t&queue=0&offset=1e3":        "not an integer",
		"topic=t&queue=0&offset=99999999999999999999": "not an integer",
		"topic=t&queue=0&offset=0&n=0":                "n: want 1 to 32, got 0",
		"topic=t&queue=0&offset=0&n=33":               "n: want 1 to 32, got 33",
		"topic=t&queue=0&offset=0&n=-5":               "n: want 1 to 32",
		"topic=t&queue=0&offset=0&n=abc":              `n: "abc" is not an integer`,
	} {
		if msg := getErr(t, s, "/ui/api/messages?"+query, http.StatusBadRequest); !strings.Contains(msg, wantIn) {
			t.Errorf("%q: error %q lacks %q", query, msg, wantIn)
		}
	}
	if _, after := src.lastQuery(); after != before {
		t.Fatalf("malformed searches reached the Source: %d queries, want %d", after, before)
	}
}

// FuzzMessageQuery: no query string panics the parser, and what it
// passes holds the forms' promises.
func FuzzMessageQuery(f *testing.F) {
	for _, s := range []string{"", "id=x", "topic=t&key=k", "topic=t&queue=1&offset=2&n=3", "queue=&offset=", "n=99&topic=t&offset=0&queue=0", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/ui/api/messages", nil)
		r.URL.RawQuery = raw
		q, err := messageQuery(r)
		if err != nil {
			return
		}
		switch {
		case q.ID != "":
			if q.Key != "" || strings.TrimSpace(q.ID) != q.ID {
				t.Fatalf("%q: %+v", raw, q)
			}
		case q.Key != "":
			if q.Topic == "" {
				t.Fatalf("%q: a key search without a topic: %+v", raw, q)
			}
		default:
			if q.Topic == "" || q.Queue < 0 || q.Offset < 0 || q.N < 1 || q.N > MessageMax {
				t.Fatalf("%q: %+v", raw, q)
			}
		}
	})
}

// TestMessageView: the page's view of a stored message: properties shown
// apart, a body that is not UTF-8 in base64, one over 16 KiB cut and
// marked.
func TestMessageView(t *testing.T) {
	big := strings.Repeat("x", bodyMax+10)
	src := &fakeSource{messages: []StoredMessage{
		{Topic: "t", Queue: 1, QueueOffset: 2, MsgID: "id", Properties: map[string]string{"UNIQ_KEY": "u", "KEYS": "k1 k2", "TAGS": "tg", "a": "b"}, Body: []byte("hello")},
		{Topic: "t", Body: []byte{0xff, 0xfe, 0x00}},
		{Topic: "t", Body: []byte(big)},
		{Topic: "t"},
	}}
	s := server(t, src, Options{})
	var ms []Message
	body := get(t, s, "/ui/api/messages?id=x", &ms)
	if len(ms) != 4 {
		t.Fatalf("messages: %s", body)
	}
	if m := ms[0]; m.UniqKey != "u" || m.Keys != "k1 k2" || m.Tags != "tg" || m.Properties["a"] != "b" || m.Body != "hello" || m.BodySize != 5 ||
		m.BodyBase64 || m.Truncated || m.Queue != 1 || m.QueueOffset != 2 || m.MsgID != "id" {
		t.Errorf("text message: %+v", m)
	}
	if m := ms[1]; !m.BodyBase64 || m.Body != "//4A" || m.BodySize != 3 {
		t.Errorf("binary message: %+v", m)
	}
	if m := ms[2]; m.BodyBase64 || !m.Truncated || len(m.Body) != bodyMax || m.BodySize != len(big) {
		t.Errorf("large message: base64 %v truncated %v, %d of %d bytes", m.BodyBase64, m.Truncated, len(m.Body), m.BodySize)
	}
	if m := ms[3]; m.Properties == nil || m.Body != "" || m.BodySize != 0 {
		t.Errorf("empty message: %+v", m)
	}
	if !strings.Contains(body, `"properties":{}`) {
		t.Errorf("no properties as null: %s", body)
	}
}

// TestMessageQueryEscapes: parameters are read decoded.
func TestMessageQueryEscapes(t *testing.T) {
	src := &fakeSource{}
	s := server(t, src, Options{})
	var ms []Message
	get(t, s, "/ui/api/messages?"+url.Values{"topic": {"a&b"}, "key": {"k=1 2"}}.Encode(), &ms)
	if q, _ := src.lastQuery(); q.Topic != "a&b" || q.Key != "k=1 2" {
		t.Fatalf("query %+v", q)
	}
}
