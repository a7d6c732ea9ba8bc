package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/samsamq/samsa/broker"
)

func init() {
	register(command{name: "broker", summary: "run a broker (RocketMQ 4.x remoting protocol, broker.conf properties)", run: runBroker})
}

// propFlags collects repeated -D key=value flags.
type propFlags []string

func (p *propFlags) String() string { return strings.Join(*p, " ") }
func (p *propFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("want key=value, got %q", v)
	}
	*p = append(*p, v)
	return nil
}

// brokerFlags are the flags shared by samsa broker and samsa dev: a
// broker.conf, -D overrides, and shorthands for the common keys. Flags win
// over the file.
type brokerFlags struct {
	conf     string
	props    propFlags
	namesrv  string
	dir      string
	listen   string
	port     int
	admin    string
	flush    string
	backend  string
	logLevel string
}

func (f *brokerFlags) register(fs *flag.FlagSet, withConf bool) {
	if withConf {
		fs.StringVar(&f.conf, "c", "", "broker.conf (RocketMQ properties: brokerName=..., namesrvAddr=a:9876;b:9876, ...)")
		fs.StringVar(&f.namesrv, "n", "", "namesrvAddr: name servers, ';'-separated")
		fs.StringVar(&f.dir, "dir", "", "storePathRootDir")
	}
	fs.Var(&f.props, "D", "key=value: set any broker.conf property (repeatable; see -list-properties)")
	fs.StringVar(&f.listen, "listen", "", "listenAddr: host the remoting port binds (default 127.0.0.1)")
	fs.IntVar(&f.port, "port", 0, "listenPort (default 10911)")
	fs.StringVar(&f.admin, "admin", "", "adminListen: /metrics and /debug/pprof (default 127.0.0.1:0; off disables)")
	fs.StringVar(&f.flush, "flush", "", "flushDiskType: ASYNC_FLUSH or SYNC_FLUSH (or async, sync)")
	fs.StringVar(&f.backend, "backend", "", "storeBackend: pwrite, mmap, odirect, uring")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

// config builds the broker's Config: file, then shorthand flags, then -D.
func (f *brokerFlags) config(fs *flag.FlagSet) (broker.Config, *slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(f.logLevel)); err != nil {
		return broker.Config{}, nil, fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	var cfg broker.Config
	if f.conf != "" {
		r, err := os.Open(f.conf)
		if err != nil {
			return cfg, nil, err
		}
		unknown, err := cfg.ParseProperties(r)
		_ = r.Close() // read-only
		if err != nil {
			return cfg, nil, fmt.Errorf("%s: %w", f.conf, err)
		}
		if len(unknown) > 0 {
			log.Warn("broker.conf: properties this broker does not use (ignored)", "file", f.conf, "keys", strings.Join(unknown, ","))
		}
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var errs []error
	set := func(flagName, key, v string) {
		if given[flagName] {
			if err := cfg.Set(key, v); err != nil {
				errs = append(errs, fmt.Errorf("-%s: %w", flagName, err))
			}
		}
	}
	set("n", "namesrvAddr", f.namesrv)
	set("dir", "storePathRootDir", f.dir)
	set("listen", "listenAddr", f.listen)
	set("port", "listenPort", strconv.Itoa(f.port))
	set("admin", "adminListen", f.admin)
	flush := strings.ToUpper(f.flush)
	if flush == "SYNC" || flush == "ASYNC" {
		flush += "_FLUSH"
	}
	set("flush", "flushDiskType", flush)
	set("backend", "storeBackend", f.backend)
	for _, kv := range f.props {
		k, v, _ := strings.Cut(kv, "=")
		if err := cfg.Set(k, v); err != nil {
			errs = append(errs, fmt.Errorf("-D %s: %w", kv, err))
		}
	}
	cfg.Logger = log
	cfg.DashboardAdmin = dashboardAdmin // the dashboard's cluster view (broker_dashboard.go)
	return cfg, log, errors.Join(errs...)
}

func runBroker(args []string) error {
	brokerProcs()
	if len(args) > 0 && args[0] == "config" {
		return brokerConfig(args[1:])
	}
	fs := newFlagSet("broker", "", "Run a broker until SIGINT or SIGTERM. Flags override the file.\n\n"+
		"samsa broker config [flags] [ADDR]  prints a running broker's configuration (secrets masked).")
	var f brokerFlags
	f.register(fs, true)
	printCfg := fs.Bool("p", false, "print the effective configuration and exit")
	list := fs.Bool("list-properties", false, "list the broker.conf keys this broker knows and exit")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := refuseArgs(fs); err != nil {
		return err
	}
	if *list {
		names := broker.PropertyNames()
		sort.Strings(names)
		fmt.Println(strings.Join(names, "\n"))
		return nil
	}
	cfg, log, err := f.config(fs)
	if err != nil {
		return err
	}
	if *printCfg {
		cfg.EnsureDefaults()
		fmt.Println(cfg.String())
		return cfg.Validate()
	}
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return errors.Join(err, b.Close())
	}
	log.Info("broker: configuration", "config", b.Config().String())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	signal.Stop(sig)
	log.Info("broker: stopping", "signal", s.String())
	return b.Close()
}
