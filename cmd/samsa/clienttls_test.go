package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/internal/netx/netxtest"
)

// TestClientCommandsTLS: against a name server and broker enforcing TLS,
// the client commands work with --tls-ca, fail without TLS, and report an
// unreadable CA file.
func TestClientCommandsTLS(t *testing.T) {
	certs := netxtest.New(t)
	srv := netx.TLSServerOptions{Mode: netx.TLSEnforcing, CertFile: certs.ServerCertFile, KeyFile: certs.ServerKey}
	cfg := broker.Config{}
	cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSCAFile, cfg.TLSEnable = srv.Mode, srv.CertFile, srv.KeyFile, certs.CAFile, true
	dev, err := devcluster.Start(devcluster.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Broker: cfg, NamesrvTLS: srv})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ns := "--namesrv=" + dev.NamesrvAddr()
	tlsCA := "--tls-ca=" + certs.CAFile
	run := func(in string, f func([]string) error, args ...string) (string, error) {
		t.Helper()
		return stdio(t, in, func() error { return f(append(args, ns, "--timeout", "10s")) })
	}
	if out, err := run("", runTopic, "create", "tls-topic", "--queues", "2", tlsCA); err != nil || !strings.Contains(out, "created") {
		t.Fatalf("topic create over TLS: %v\n%s", err, out)
	}
	if out, err := run("one\ntwo\n", runProduce, "--topic", "tls-topic", tlsCA); err != nil {
		t.Fatalf("produce over TLS: %v\n%s", err, out)
	}
	out, err := run("", runConsume, "--topic", "tls-topic", "--group", "tls-g", "--from", "earliest", "--count", "2", tlsCA)
	if err != nil || !strings.Contains(out, "one") || !strings.Contains(out, "two") {
		t.Fatalf("consume over TLS: %v\n%s", err, out)
	}
	if _, err := run("", runTopic, "list"); err == nil {
		t.Fatal("a plain client listed topics of an enforcing name server")
	}
	if _, err := run("", runTopic, "list", "--tls-ca=/nonexistent/ca.pem"); err == nil || !strings.Contains(err.Error(), "--tls") {
		t.Fatalf("an unreadable --tls-ca: %v", err)
	}
}
