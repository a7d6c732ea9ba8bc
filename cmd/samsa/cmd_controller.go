package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/controller/ctlclient"
	"github.com/samsamq/samsa/controller/raftctl"
	"github.com/samsamq/samsa/internal/netx"
)

func init() {
	register(command{name: "controller", summary: "run a fail-over controller replica (Raft), or show/elect through one", run: runController})
}

// controllerFlags are the flags of a controller replica, shared by `samsa
// controller` (no prefix) and `samsa namesrv --controller` ("controller-").
type controllerFlags struct {
	id, listen, raftListen, peers, dataDir   string
	electionTimeout, tick, recoveryWait      time.Duration
	raftHeartbeat, raftElection              time.Duration
	unclean, aclOn                           bool
	aclFile                                  string
	tlsMode, tlsCert, tlsKey, tlsCA, tlsAuth string
}

func (f *controllerFlags) register(fs *flag.FlagSet, prefix string) {
	fs.StringVar(&f.id, prefix+"id", "1", "this replica's id in the peer list")
	fs.StringVar(&f.listen, prefix+"listen", "", "address to listen on for brokers and tools, e.g. 0.0.0.0:9878 (default: this replica's RPC address in the peer list; without --"+prefix+"peers, 127.0.0.1:9878)")
	fs.StringVar(&f.raftListen, prefix+"raft-listen", "", "address to listen on for the other replicas, Raft (default: this replica's Raft address in the peer list; without --"+prefix+"peers, 127.0.0.1:9877)")
	fs.StringVar(&f.peers, prefix+"peers", "", "every replica as ID=RAFTHOST:PORT@RPCHOST:PORT, comma-separated, the same on all replicas (empty: one replica, this one, at the listen addresses)")
	fs.StringVar(&f.dataDir, prefix+"data-dir", "", "directory of the Raft log and snapshots (required)")
	fs.DurationVar(&f.electionTimeout, prefix+"election-timeout", controller.DefaultElectionTimeout, "a master silent this long is replaced")
	fs.DurationVar(&f.tick, prefix+"tick-interval", 0, "how often the leader looks for dead masters (0: election timeout / 10)")
	fs.DurationVar(&f.raftHeartbeat, prefix+"raft-heartbeat-timeout", raftctl.DefaultRaftHeartbeatTimeout, "Raft heartbeat timeout between replicas")
	fs.DurationVar(&f.raftElection, prefix+"raft-election-timeout", raftctl.DefaultRaftElectionTimeout, "Raft election timeout between replicas")
	fs.DurationVar(&f.recoveryWait, prefix+"recovery-wait", 0, "a group that went down whole waits this long for the missing members of its sync-state set before it elects (0: twice the election timeout)")
	fs.BoolVar(&f.unclean, prefix+"unclean-election", false, "elect the most up-to-date alive replica when no clean election is possible (none of the sync-state set alive, or every alive one lacks acknowledged messages); acknowledged messages may be lost")
	fs.BoolVar(&f.aclOn, prefix+"acl", false, "access control: requests must be signed by an admin account of -"+prefix+"acl-file (RocketMQ plain ACL)")
	fs.StringVar(&f.aclFile, prefix+"acl-file", "conf/plain_acl.yml", "accounts file (RocketMQ plain_acl.yml format), read with -"+prefix+"acl")
	fs.StringVar(&f.tlsMode, prefix+"tls-mode", "disabled", "TLS of the broker-facing port: disabled, permissive or enforcing")
	fs.StringVar(&f.tlsCert, prefix+"tls-cert", "", "PEM certificate of the server")
	fs.StringVar(&f.tlsKey, prefix+"tls-key", "", "PEM key of the server")
	fs.StringVar(&f.tlsCA, prefix+"tls-ca", "", "PEM CAs that sign client certificates")
	fs.StringVar(&f.tlsAuth, prefix+"tls-client-auth", "none", "client certificates: none, optional or require")
}

// options turns the flags into raftctl.Options, opening the listeners on
// the bind addresses when they differ from the advertised ones.
func (f *controllerFlags) options(log *slog.Logger) (raftctl.Options, error) {
	o := raftctl.Options{ID: f.id, DataDir: f.dataDir, Logger: log,
		Controller:           controller.Config{ElectionTimeout: f.electionTimeout, UncleanElection: f.unclean, RecoveryWait: f.recoveryWait},
		TickInterval:         f.tick,
		RaftHeartbeatTimeout: f.raftHeartbeat, RaftElectionTimeout: f.raftElection}
	o.TLS.Mode, o.TLS.CertFile, o.TLS.KeyFile, o.TLS.CAFile, o.TLS.ClientAuth = f.tlsMode, f.tlsCert, f.tlsKey, f.tlsCA, f.tlsAuth
	if f.peers == "" {
		raftAddr, rpcAddr := f.raftListen, f.listen
		if raftAddr == "" {
			raftAddr = "127.0.0.1:9877"
		}
		if rpcAddr == "" {
			rpcAddr = "127.0.0.1:9878"
		}
		o.Peers = []raftctl.Peer{{ID: f.id, RaftAddr: raftAddr, RPCAddr: rpcAddr}}
	} else {
		ps, err := raftctl.ParsePeers(f.peers)
		if err != nil {
			return o, err
		}
		o.Peers = ps
	}
	if f.dataDir == "" {
		return o, fmt.Errorf("--data-dir is required")
	}
	for _, p := range o.Peers {
		if p.ID != f.id {
			continue
		}
		if f.raftListen != "" && f.raftListen != p.RaftAddr {
			ln, err := net.Listen("tcp", f.raftListen)
			if err != nil {
				return o, fmt.Errorf("raft listen: %w", err)
			}
			o.RaftListener = ln
		}
		if f.listen != "" && f.listen != p.RPCAddr {
			ln, err := net.Listen("tcp", f.listen)
			if err != nil {
				if o.RaftListener != nil {
					_ = o.RaftListener.Close() // nothing served on it
				}
				return o, fmt.Errorf("listen: %w", err)
			}
			o.Listener = ln
		}
	}
	return o, nil
}

// open starts the replica; stop closes it and its ACL store.
func (f *controllerFlags) open(log *slog.Logger) (stop func() error, err error) {
	o, err := f.options(log)
	if err != nil {
		return nil, err
	}
	if f.aclOn {
		if o.ACL, err = acl.Open(f.aclFile, 5*time.Second, log); err != nil {
			// Nothing was served on the listeners.
			if o.RaftListener != nil {
				_ = o.RaftListener.Close()
			}
			if o.Listener != nil {
				_ = o.Listener.Close()
			}
			return nil, err
		}
	}
	node, err := raftctl.Open(o)
	if err != nil {
		if o.ACL != nil {
			o.ACL.Close()
		}
		return nil, err
	}
	return func() error {
		err := node.Close()
		if o.ACL != nil {
			o.ACL.Close()
		}
		return err
	}, nil
}

func runController(args []string) error {
	if len(args) > 0 && (args[0] == "show" || args[0] == "elect" || args[0] == "status") {
		return runControllerAdmin(args[0], args[1:])
	}
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	var f controllerFlags
	f.register(fs, "")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), `usage: samsa controller [flags]
       samsa controller show|elect --controller ADDRS --cluster C --broker B [--unclean]
       samsa controller status --controller ADDRS

Runs one replica of the fail-over controller: Raft between the replicas
(--raft-listen), the brokers' and tools' port (--listen). Three replicas:

  samsa controller --id 1 --peers 1=h1:9877@h1:9878,2=h2:9877@h2:9878,3=h3:9877@h3:9878 \
      --data-dir /var/samsa/ctl     # listens at h1:9877 (Raft) and h1:9878 (brokers)

The peer list is bootstrapped on an empty data dir and must be the same on
every replica. Without --peers the controller has one replica.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	stop, err := f.open(log)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	log.Info("stopping", "signal", s.String())
	signal.Stop(sig)
	return stop()
}

// runControllerAdmin: show a group, force an election, or list the
// replicas' view of the leader.
func runControllerAdmin(verb string, args []string) error {
	fs := flag.NewFlagSet("controller "+verb, flag.ContinueOnError)
	addrs := fs.String("controller", "127.0.0.1:9878", "controller replicas' addresses (--listen), comma-separated")
	cluster := fs.String("cluster", "", "broker cluster name (show, elect)")
	brokerName := fs.String("broker", "", "broker name (show, elect)")
	unclean := fs.Bool("unclean", false, "elect: the most up-to-date alive replica even when it lacks acknowledged messages "+
		"(they are lost); only when the controller says no clean election is possible. With the master alive it elects nothing: "+
		"it lets replicas that refuse to cut acknowledged messages only they kept (their log says so) cut them and follow")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after")
	ak := fs.String("access-key", "", "sign requests with this admin account (controller run with -acl)")
	sk := fs.String("secret-key", "", "the account's secret key")
	var tlsOpts netx.TLSClientOptions
	fs.BoolVar(&tlsOpts.Enable, "tls", false, "connect with TLS")
	fs.StringVar(&tlsOpts.CAFile, "tls-ca", "", "PEM CAs that sign the controller's certificate (default: the system's)")
	fs.StringVar(&tlsOpts.CertFile, "tls-cert", "", "PEM client certificate, for a controller that asks")
	fs.StringVar(&tlsOpts.KeyFile, "tls-key", "", "PEM key of the client certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	list := strings.Split(*addrs, ",")
	tc, err := tlsOpts.Config()
	if err != nil {
		return err
	}
	cl, err := ctlclient.New(ctlclient.Options{Addrs: list, AccessKey: *ak, SecretKey: *sk, TLS: tc})
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }() // ctlclient's Close reports nothing
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	g := controller.Group{Cluster: *cluster, Broker: *brokerName}
	if *unclean && verb != "elect" {
		return fmt.Errorf("controller %s: --unclean goes with elect", verb)
	}
	switch verb {
	case "status":
		var out []any
		for _, a := range list {
			md, err := cl.Metadata(ctx, a)
			if err != nil {
				out = append(out, map[string]string{"addr": a, "error": err.Error()})
				continue
			}
			out = append(out, map[string]any{"addr": a, "metadata": md})
		}
		return enc.Encode(out)
	case "show":
		rep, err := cl.ShowPositions(ctx, g)
		if err != nil {
			return err
		}
		fmt.Println(rep.Result.String())
		return enc.Encode(map[string]any{"result": rep.Result, "replicas": rep.Replicas, "positions": rep.Positions})
	default: // elect
		r, err := cl.ElectMaster(ctx, g, *unclean)
		if err != nil {
			return err
		}
		fmt.Println(r.String())
		return nil
	}
}
