package broker

import (
	"fmt"
	"net/http"
)

// withHealth serves /healthz and /readyz on the admin listener ahead of
// next (and of its access control: a probe carries no account; the
// answers tell nothing but the state below).
//
//   - /healthz: 200 "ok" while the process serves HTTP (liveness).
//   - /readyz: 200 "ready" while the broker is started, not closing, and
//     its store is not broken (a failed write or fsync); 503 with the
//     reason otherwise. A store that refuses appends for lack of space is
//     ready (it serves reads, and leaves that state by itself); the body
//     says so.
func withHealth(b *Broker, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			// A failed write below is the client gone.
			_, _ = fmt.Fprintln(w, "ok")
		case "/readyz":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			ready, why := b.readiness()
			if !ready {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintln(w, "not ready:", why)
				return
			}
			_, _ = fmt.Fprintln(w, "ready"+why)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// readiness says whether the broker should be sent traffic, and why not
// (or, when ready, a note starting with "; ").
func (b *Broker) readiness() (bool, string) {
	b.mu.Lock()
	started := b.mu.started
	b.mu.Unlock()
	switch {
	case !started:
		return false, "not started"
	case b.closing.Load():
		return false, "closing"
	}
	if b.store.Err() != nil {
		return false, "store broken (a write or fsync failed; see the log)"
	}
	if b.store.Metrics().ReadOnly {
		return true, "; store read-only: disk full, appends refused"
	}
	return true, ""
}
