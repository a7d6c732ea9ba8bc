package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/samsamq/samsa/namesrv"
)

func init() {
	register(command{name: "namesrv", summary: "run a name server (RocketMQ remoting protocol)", run: runNamesrv})
}

func runNamesrv(args []string) (err error) {
	fs := newFlagSet("namesrv", "", "Run a name server (RocketMQ remoting protocol) until SIGINT or SIGTERM.")
	var o namesrv.Options
	fs.StringVar(&o.Listen, "listen", namesrv.DefaultListen, "TCP address to listen on")
	fs.DurationVar(&o.ScanInterval, "scan-interval", namesrv.DefaultScanInterval, "how often silent brokers are looked for")
	fs.DurationVar(&o.BrokerExpiry, "broker-expiry", namesrv.DefaultBrokerExpiry, "how long a broker may go without registering")
	fs.IntVar(&o.MaxFrame, "max-frame", 0, "largest frame accepted, bytes (0: 16 MiB)")
	fs.BoolVar(&o.KeepRegistrationOnClose, "keep-on-close", false, "keep a broker registered when its connection closes")
	fs.IntVar(&o.MaxConns, "max-connections", 0, "open connections accepted (0: half the file-descriptor limit)")
	fs.IntVar(&o.MaxConnsPerAddr, "max-connections-per-address", 0, "open connections from one IP (0: 4096)")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 0, "close a connection silent this long (0: 120s)")
	fs.DurationVar(&o.FrameTimeout, "frame-timeout", 0, "close a connection whose frame is not complete this long after it began (0: 30s)")
	fs.StringVar(&o.TLS.Mode, "tls-mode", "disabled", "TLS: disabled, permissive (TLS and plain) or enforcing")
	fs.StringVar(&o.TLS.CertFile, "tls-cert", "", "PEM certificate of the server")
	fs.StringVar(&o.TLS.KeyFile, "tls-key", "", "PEM key of the server")
	fs.StringVar(&o.TLS.CAFile, "tls-ca", "", "PEM CAs that sign client certificates")
	fs.StringVar(&o.TLS.ClientAuth, "tls-client-auth", "none", "client certificates: none, optional or require")
	fs.BoolVar(&o.ACLEnable, "acl", false, "access control: requests must be signed by an account of -acl-file (RocketMQ plain ACL)")
	fs.StringVar(&o.ACLFile, "acl-file", "conf/plain_acl.yml", "accounts file (RocketMQ plain_acl.yml format), read with -acl")
	withCtl := fs.Bool("controller", false, "also run a fail-over controller replica in this process (flags -controller-*, as samsa controller's)")
	var ctl controllerFlags
	ctl.register(fs, "controller-")
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
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))

	srv, err := namesrv.New(o)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	if *withCtl {
		stopCtl, err := ctl.open(o.Logger)
		if err != nil {
			return errors.Join(fmt.Errorf("controller: %w", err), srv.Close())
		}
		defer func() {
			if cerr := stopCtl(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("controller: %w", cerr))
			}
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	o.Logger.Info("stopping", "signal", s.String())
	signal.Stop(sig)
	return srv.Close()
}
