package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/proxy"
)

func init() {
	register(command{name: "proxy", summary: "serve RocketMQ 5's gRPC protocol (official RocketMQ 5 clients) in front of a cluster", run: runProxy})
}

func runProxy(args []string) error {
	fs := newFlagSet("proxy", "", "Serve RocketMQ 5's gRPC protocol (apache.rocketmq.v2.MessagingService) to the official\n"+
		"RocketMQ 5 clients, in front of the cluster of the name servers -n, until SIGINT or SIGTERM.")
	cf := addClientFlags(fs)
	listen := fs.String("listen", "127.0.0.1:8081", "gRPC address to listen on")
	cert := fs.String("grpc-tls-cert", "", "PEM certificate: serve gRPC over TLS (with --grpc-tls-key)")
	key := fs.String("grpc-tls-key", "", "PEM key of --grpc-tls-cert")
	aclFile := fs.String("acl-file", "", "accounts file (plain_acl.yml): calls must be signed by one of its accounts (default: no ACL)")
	maxMsg := fs.Int("max-message-size", 4<<20, "largest message body accepted, bytes")
	maxRecv := fs.Int("max-receives", 1024, "receives held at once (long polls included); more are refused")
	attempts := fs.Int("max-delivery-attempts", 17, "deliveries of a message before a push consumer moves it to the DLQ")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := refuseArgs(fs); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	co, err := cf.options()
	if err != nil {
		return err
	}
	o := proxy.Options{NameServers: co.NameServers, Listen: *listen, Credentials: co.Credentials, BrokerTLS: co.TLS,
		MaxMessageSize: *maxMsg, MaxReceives: *maxRecv, MaxDeliveryAttempts: *attempts, Logger: log}
	if (*cert == "") != (*key == "") {
		return errors.New("proxy: --grpc-tls-cert and --grpc-tls-key go together")
	}
	if *cert != "" {
		c, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		o.TLS = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
	}
	if *aclFile != "" {
		st, err := acl.Open(*aclFile, 10*time.Second, log)
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		defer st.Close()
		o.ACL = st
	}
	p, err := proxy.New(o)
	if err != nil {
		return err
	}
	fmt.Printf("samsa proxy: gRPC %s (TLS %v, ACL %v) in front of name servers %v\n", p.Addr(), o.TLS != nil, o.ACL != nil, o.NameServers)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	got := <-sig
	signal.Stop(sig)
	log.Info("proxy: stopping", "signal", got.String())
	return p.Close()
}
