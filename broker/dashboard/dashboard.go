package dashboard

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
)

//go:embed ui
var assets embed.FS

// Options are what a Dashboard needs.
type Options struct {
	// Source answers the views of this broker. Required.
	Source Source
	// Admin asks the name servers and the other brokers for the cluster
	// view; the Dashboard owns it (Close closes it). Nil: the cluster
	// view shows this broker alone.
	Admin Admin
	// AdminAccount, with ACL on, says whether an account (the request's
	// HTTP basic auth) is an admin's: a reset needs one. Nil means ACL is
	// off; a reset is then allowed only when ListenAddr is on loopback.
	AdminAccount func(accessKey, secretKey string) bool
	// ListenAddr is the admin listener's host:port.
	ListenAddr string
}

// Dashboard serves the page and its JSON API. Safe for concurrent use.
type Dashboard struct {
	src          Source
	admin        Admin
	adminAccount func(accessKey, secretKey string) bool
	loopback     bool // the admin listener accepts local connections only
	static       http.Handler
}

// New returns a Dashboard over o.Source.
func New(o Options) (*Dashboard, error) {
	if o.Source == nil {
		return nil, errors.New("dashboard: no Source")
	}
	static, err := fs.Sub(assets, "ui")
	if err != nil {
		return nil, err
	}
	return &Dashboard{src: o.Source, admin: o.Admin, adminAccount: o.AdminAccount, loopback: loopbackListener(o.ListenAddr),
		static: http.StripPrefix("/ui/", staticHeaders(http.FileServerFS(static)))}, nil
}

// Register adds the page (/ui/) and its API (/ui/api/) to mux.
func (d *Dashboard) Register(mux *http.ServeMux) {
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		d.static.ServeHTTP(w, r)
	})
	mux.HandleFunc("/ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusMovedPermanently) })
	get := func(path string, h func(*http.Request) (any, error)) {
		mux.HandleFunc("/ui/api/"+path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				answerError(w, http.StatusMethodNotAllowed, "use GET")
				return
			}
			v, err := h(r)
			answer(w, v, err)
		})
	}
	get("overview", d.overview)
	get("cluster", d.cluster)
	get("topics", d.topics)
	get("topic", d.topic)
	get("groups", d.groups)
	get("group", d.group)
	get("messages", d.messages)
	mux.HandleFunc("/ui/api/group/reset", d.reset)
	mux.HandleFunc("/ui/api/", func(w http.ResponseWriter, r *http.Request) {
		answerError(w, http.StatusNotFound, "no such dashboard API: "+r.URL.Path)
	})
}

// Close releases the Admin's connections.
func (d *Dashboard) Close() error {
	if d.admin == nil {
		return nil
	}
	return d.admin.Close()
}

// staticHeaders sets the headers of the embedded assets: never cached
// across a broker upgrade, never framed by another site.
func staticHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		next.ServeHTTP(w, r)
	})
}
