package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/samsamq/samsa/broker/dashboard"
)

// httpListener is the HTTP listener (adminListen): Prometheus /metrics, the
// dashboard (/ui/) and /debug/pprof, on its own mux (nothing registered
// globally).
type httpListener struct {
	ln  net.Listener
	srv *http.Server
	ui  *dashboard.Dashboard // /ui/ (dashboard_source.go)
}

func startHTTPListener(b *Broker) (*httpListener, error) {
	ln, err := net.Listen("tcp", b.cfg.AdminListen)
	if err != nil {
		return nil, fmt.Errorf("broker: admin listen %s: %w", b.cfg.AdminListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{ErrorLog: nil}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "samsa broker %s (%s)\n/ui/\n/metrics\n/healthz\n/readyz\n/debug/pprof/\n", b.cfg.BrokerName, b.Addr()) // a failed write is the client gone
	})
	ui, err := mountDashboard(b, mux, ln.Addr().String())
	if err != nil {
		_ = ln.Close() // nothing accepted yet
		return nil, fmt.Errorf("broker: dashboard: %w", err)
	}
	var h http.Handler = mux
	if b.acl != nil {
		h = b.acl.basicAuth(b, mux)
	}
	h = withHealth(b, h) // /healthz and /readyz (metrics_health.go)
	a := &httpListener{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ui: ui}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("broker: admin server stopped", "err", err)
		}
	}()
	return a, nil
}

func (a *httpListener) addr() string { return a.ln.Addr().String() }

func (a *httpListener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
	_ = a.ui.Close() // its connections to other brokers: nothing to lose
}
