package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
)

func init() {
	register(command{name: "dev", summary: "run a name server and a broker in one process, on loopback (data in a temp dir)", run: runDev})
}

func runDev(args []string) error {
	brokerProcs()
	fs := newFlagSet("dev", "", "A name server and a broker in one process, both on loopback, until SIGINT or SIGTERM.")
	var f brokerFlags
	f.register(fs, false)
	dir := fs.String("dir", "", "data directory (default: a temporary one, removed on exit)")
	keep := fs.Bool("keep", false, "keep the temporary data directory on exit")
	nsListen := fs.String("namesrv", "127.0.0.1:9876", "name server address (127.0.0.1:0 picks a free port)")
	slaves := fs.Int("slaves", 0, "slaves to run beside the broker (brokerId 1, 2, ...; free ports)")
	replication := fs.String("replication", "", "with --slaves: sync (SYNC_MASTER: a send is answered once a slave holds it) or async (ASYNC_MASTER); default the broker's role")
	withCtl := fs.Bool("controller", false, "also run a fail-over controller (one replica) in this process, and the brokers in controller mode:\nwith --slaves, a slave takes over when the master stops")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := refuseArgs(fs); err != nil {
		return err
	}
	cfg, log, err := f.config(fs)
	if err != nil {
		return err
	}
	switch *replication {
	case "":
	case "sync":
		cfg.BrokerRole = broker.SyncMaster
	case "async":
		cfg.BrokerRole = broker.AsyncMaster
	default:
		return fmt.Errorf("dev: --replication %q: want sync or async", *replication)
	}
	if *replication != "" && *slaves == 0 {
		return errors.New("dev: --replication needs --slaves N")
	}
	portGiven := false
	fs.Visit(func(fl *flag.Flag) { portGiven = portGiven || fl.Name == "port" })
	if !portGiven {
		_ = cfg.Set("listenPort", "10911")
	}
	opts := devcluster.Options{Dir: *dir, Keep: *keep, NamesrvListen: *nsListen, Broker: cfg, Logger: log, Slaves: *slaves}
	if *withCtl {
		ctl, err := devcluster.StartController(devcluster.ControllerOptions{Dir: *dir, Keep: *keep, Logger: log})
		if err != nil {
			return fmt.Errorf("dev: controller: %w", err)
		}
		defer func() {
			if serr := ctl.Close(); serr != nil {
				log.Warn("dev: controller: stop", "err", serr)
			}
		}()
		opts.ControllerAddrs = []string{ctl.Addr()}
		fmt.Printf("samsa dev: controller %s (one replica; brokers in controller mode)\n", ctl.Addr())
	}
	dev, err := devcluster.Start(opts)
	if err != nil && !portGiven && isAddrInUse(err) {
		// The well-known ports are taken (another cluster runs): pick
		// free ones rather than fail.
		log.Warn("dev: default ports in use; using free ones", "err", err)
		_ = opts.Broker.Set("listenPort", "0")
		opts.NamesrvListen = "127.0.0.1:0"
		dev, err = devcluster.Start(opts)
	}
	if err != nil {
		return err
	}
	fmt.Printf("samsa dev: name server %s  broker %s (%s)  metrics http://%s/metrics  dashboard http://%s/ui/  data %s\n",
		dev.NamesrvAddr(), dev.BrokerAddr(), dev.Broker.Config().BrokerName, dev.Broker.AdminAddr(), dev.Broker.AdminAddr(), dev.Dir)
	for _, s := range dev.Slaves {
		follows := string(dev.Broker.Config().BrokerRole)
		if *withCtl {
			follows = fmt.Sprintf("the controller's master; sync-state set %v", dev.Broker.ControllerSyncSet())
		}
		fmt.Printf("samsa dev: slave %s (brokerId %d, following %s)  metrics http://%s/metrics\n", s.Addr(), s.Config().BrokerID,
			follows, s.AdminAddr())
	}
	fmt.Printf("try: printf 'stats\\r\\n' | nc %s   (clients: name server %s)\n",
		hostPortSpace(dev.BrokerAddr()), dev.NamesrvAddr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	signal.Stop(sig)
	log.Info("dev: stopping", "signal", s.String())
	return dev.Close()
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
