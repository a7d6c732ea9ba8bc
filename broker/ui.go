package broker

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"time"
)

// The dashboard: a web page on the admin listener, in the manner of
// RocketMQ Dashboard, at /ui/. Its assets (broker/ui/) are embedded in the
// binary: plain HTML, CSS and JavaScript, no build step, nothing fetched
// from elsewhere. The page polls a small JSON API under /ui/api/:
//
//	GET  /ui/api/overview      this broker: name, role, totals, rates, per-topic counts
//	GET  /ui/api/cluster       every broker the name servers know: role, rates, disk, replication
//	GET  /ui/api/topics        this broker's topics: queues, offsets, counts
//	GET  /ui/api/topic?topic=  one topic's queues and the groups with offsets on it
//	GET  /ui/api/groups        consumer groups: members online, lag
//	GET  /ui/api/group?group=  members, subscriptions, lag per queue
//	POST /ui/api/group/reset   move a group's offsets (see ui_reset.go)
//	GET  /ui/api/messages?...  message search by id, key, or queue and offset
//
// Everything sits behind the admin listener's basic auth (with ACL on),
// as /metrics does; the one mutating endpoint needs POST, a JSON body and
// the X-Samsa-UI header (a cross-site form can send none of them), and
// refuses with ACL off unless the admin listener is on loopback.
//
// The views of topics, groups and messages are this broker's own state;
// the cluster view asks the name servers (GET_BROKER_CLUSTER_INFO) and
// each broker (GET_BROKER_RUNTIME_INFO, and the text stats of masters for
// their slaves' replication) through the broker's own RPC client.

//go:embed ui
var uiAssets embed.FS

// uiCallTimeout bounds each request the cluster view sends to a name
// server or broker.
const uiCallTimeout = 3 * time.Second

// uiServer answers the dashboard's requests. Safe for concurrent use.
type uiServer struct {
	b   *Broker
	rpc *rpcClient // to name servers and brokers, signed with the broker's account
}

// mountUI registers the dashboard on mux; the returned func releases its
// connections (call it when the admin listener closes).
func mountUI(b *Broker, mux *http.ServeMux) (closeFn func()) {
	u := &uiServer{b: b, rpc: newRPCClient(b.cfg.MaxFrameSize, b.net.tlsClient).signedBy(b.cfg.AccessKey, b.cfg.SecretKey)}
	static, err := fs.Sub(uiAssets, "ui")
	if err != nil {
		panic(err) // the embedded tree always has ui/
	}
	files := http.StripPrefix("/ui/", uiStatic(http.FileServerFS(static)))
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	})
	mux.HandleFunc("/ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusMovedPermanently) })
	get := func(path string, h func(*http.Request) (any, error)) {
		mux.HandleFunc("/ui/api/"+path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				uiError(w, http.StatusMethodNotAllowed, "use GET")
				return
			}
			v, err := h(r)
			uiAnswer(w, v, err)
		})
	}
	get("overview", u.overview)
	get("cluster", u.cluster)
	get("topics", u.topics)
	get("topic", u.topic)
	get("groups", u.groupList)
	get("group", u.group)
	get("messages", u.messages)
	mux.HandleFunc("/ui/api/group/reset", u.resetHandler)
	mux.HandleFunc("/ui/api/", func(w http.ResponseWriter, r *http.Request) {
		uiError(w, http.StatusNotFound, "no such dashboard API: "+r.URL.Path)
	})
	return u.rpc.close
}

// uiStatic sets the headers of the embedded assets: never cached across
// a broker upgrade, never framed by another site.
func uiStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		next.ServeHTTP(w, r)
	})
}

// uiErr is an error with its HTTP status.
type uiErr struct {
	status int
	msg    string
}

func (e *uiErr) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &uiErr{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &uiErr{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

func uiAnswer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status := http.StatusInternalServerError
		var ue *uiErr
		if errors.As(err, &ue) {
			status = ue.status
		}
		uiError(w, status, err.Error())
		return
	}
	body, err := json.Marshal(v)
	if err != nil {
		uiError(w, http.StatusInternalServerError, "encode answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body) // a failed write is the client gone
}

func uiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(body)
}

// queryInt reads an integer query parameter; def when absent.
func queryInt(r *http.Request, name string, def int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badRequest("%s: %q is not an integer", name, s)
	}
	return n, nil
}

// loopbackListener says whether the admin listener accepts only local
// connections.
func loopbackListener(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() || host == "localhost"
}
