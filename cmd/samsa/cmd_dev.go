package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/proxy"
)

func init() {
	register(command{name: "dev", summary: "run a name server and a broker (--groups N: N broker groups) in one process, on loopback (data in a temp dir)", run: runDev})
}

func runDev(args []string) error {
	brokerProcs()
	s, err := startDev(args, os.Stdout)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	got := <-sig
	signal.Stop(sig)
	s.log.Info("dev: stopping", "signal", got.String())
	return s.close()
}

// devSession is a running `samsa dev`: the cluster and, with
// --controller, its controller.
type devSession struct {
	dev   *devcluster.Cluster
	ctl   *devcluster.Controller // nil without --controller
	proxy *proxy.Server          // nil with --proxy ""
	log   *slog.Logger
}

// close stops the gRPC proxy, the cluster, then the controller (whose
// error is only logged).
func (s *devSession) close() error {
	var perr error
	if s.proxy != nil {
		perr = s.proxy.Close()
	}
	err := errors.Join(perr, s.dev.Close())
	if s.ctl != nil {
		if cerr := s.ctl.Close(); cerr != nil {
			s.log.Warn("dev: controller: stop", "err", cerr)
		}
	}
	return err
}

// startDev parses dev's flags into devcluster options, starts the
// cluster (and controller) and prints what started to out.
func startDev(args []string, out io.Writer) (*devSession, error) {
	fs := newFlagSet("dev", "", "A name server and a broker in one process, both on loopback, until SIGINT or SIGTERM;\n"+
		"with --groups N, N broker groups (broker-a, broker-b, ...) in one cluster, each with --slaves slaves.")
	var f brokerFlags
	f.register(fs, false)
	dir := fs.String("dir", "", "data directory (default: a temporary one, removed on exit)")
	keep := fs.Bool("keep", false, "keep the temporary data directory on exit")
	nsListen := fs.String("namesrv", "127.0.0.1:9876", "name server address (127.0.0.1:0 picks a free port)")
	groups := fs.Int("groups", 1, "broker groups (masters) in the cluster, all registered with the name server: broker-a, broker-b, ...;\n"+
		"the first listens on --port, the others on free ports; data under DIR/<brokerName> when more than one")
	slaves := fs.Int("slaves", 0, "slaves to run beside each broker (brokerId 1, 2, ...; free ports)")
	replication := fs.String("replication", "", "with --slaves: sync (SYNC_MASTER: a send is answered once a slave holds it) or async (ASYNC_MASTER); default the broker's role")
	proxyListen := fs.String("proxy", "127.0.0.1:8081", "gRPC address of a proxy for RocketMQ 5's clients in front of the cluster (\"\" for none;\na free port when this one is taken)")
	withCtl := fs.Bool("controller", false, "also run a fail-over controller (one replica) in this process, and the brokers in controller mode:\nwith --slaves, a slave takes over when the master stops")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	if err := refuseArgs(fs); err != nil {
		return nil, err
	}
	cfg, log, err := f.config(fs)
	if err != nil {
		return nil, err
	}
	switch *replication {
	case "":
	case "sync":
		cfg.BrokerRole = broker.SyncMaster
	case "async":
		cfg.BrokerRole = broker.AsyncMaster
	default:
		return nil, fmt.Errorf("dev: --replication %q: want sync or async", *replication)
	}
	if *replication != "" && *slaves == 0 {
		return nil, errors.New("dev: --replication needs --slaves N")
	}
	if *groups < 1 || *groups > devcluster.MaxGroups {
		return nil, fmt.Errorf("dev: --groups %d: want 1 to %d", *groups, devcluster.MaxGroups)
	}
	portGiven := false
	fs.Visit(func(fl *flag.Flag) { portGiven = portGiven || fl.Name == "port" })
	if !portGiven {
		_ = cfg.Set("listenPort", "10911")
	}
	opts := devcluster.Options{Dir: *dir, Keep: *keep, NamesrvListen: *nsListen, Broker: cfg, Logger: log,
		Groups: *groups, Slaves: *slaves}
	s := &devSession{log: log}
	if *withCtl {
		if s.ctl, err = devcluster.StartController(devcluster.ControllerOptions{Dir: *dir, Keep: *keep, Logger: log}); err != nil {
			return nil, fmt.Errorf("dev: controller: %w", err)
		}
		opts.ControllerAddrs = []string{s.ctl.Addr()}
		_, _ = fmt.Fprintf(out, "samsa dev: controller %s (one replica; brokers in controller mode)\n", s.ctl.Addr())
	}
	s.dev, err = devcluster.Start(opts)
	if err != nil && !portGiven && isAddrInUse(err) {
		// The well-known ports are taken (another cluster runs): pick
		// free ones rather than fail.
		log.Warn("dev: default ports in use; using free ones", "err", err)
		_ = opts.Broker.Set("listenPort", "0")
		opts.NamesrvListen = "127.0.0.1:0"
		s.dev, err = devcluster.Start(opts)
	}
	if err != nil {
		if s.ctl != nil {
			if cerr := s.ctl.Close(); cerr != nil {
				log.Warn("dev: controller: stop", "err", cerr)
			}
		}
		return nil, err
	}
	printDev(out, s.dev, *withCtl)
	if *proxyListen != "" {
		po := proxy.Options{NameServers: []string{s.dev.NamesrvAddr()}, Listen: *proxyListen, Logger: log}
		s.proxy, err = proxy.New(po)
		if err != nil && isAddrInUse(err) {
			po.Listen = "127.0.0.1:0"
			s.proxy, err = proxy.New(po)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("dev: proxy: %w", err), s.close())
		}
		_, _ = fmt.Fprintf(out, "samsa dev: gRPC proxy %s (RocketMQ 5 clients: endpoints %s)\n", s.proxy.Addr(), s.proxy.Addr())
	}
	return s, nil
}

// printDev says what started: the name server, each group's master and
// slaves, and how to talk to them.
func printDev(out io.Writer, dev *devcluster.Cluster, withCtl bool) {
	for i, g := range dev.Groups {
		b := g.Broker
		if i == 0 {
			_, _ = fmt.Fprintf(out, "samsa dev: name server %s  broker %s (%s)  metrics http://%s/metrics  dashboard http://%s/ui/  data %s\n",
				dev.NamesrvAddr(), g.BrokerAddr(), g.Name, b.AdminAddr(), b.AdminAddr(), dev.Dir)
		} else {
			_, _ = fmt.Fprintf(out, "samsa dev: broker %s (%s)  metrics http://%s/metrics  dashboard http://%s/ui/\n",
				g.BrokerAddr(), g.Name, b.AdminAddr(), b.AdminAddr())
		}
		for _, s := range g.Slaves {
			follows := string(b.Config().BrokerRole)
			if withCtl {
				follows = fmt.Sprintf("the controller's master; sync-state set %v", b.Replication().ControllerSyncSet())
			}
			_, _ = fmt.Fprintf(out, "samsa dev: slave %s (brokerId %d, following %s)  metrics http://%s/metrics\n", s.Addr(), s.Config().BrokerID,
				follows, s.AdminAddr())
		}
	}
	if len(dev.Groups) > 1 {
		_, _ = fmt.Fprintf(out, "samsa dev: %d broker groups in cluster %s: `samsa topic create` creates a topic on every one\n",
			len(dev.Groups), dev.Broker.Config().BrokerClusterName)
	}
	_, _ = fmt.Fprintf(out, "try: printf 'stats\\r\\n' | nc %s   (clients: name server %s)\n",
		hostPortSpace(dev.BrokerAddr()), dev.NamesrvAddr())
}

func isAddrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }

// hostPortSpace turns "h:p" into "h p" for nc.
func hostPortSpace(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i] + " " + addr[i+1:]
		}
	}
	return addr
}
