package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/loadgen/distrib"
	"github.com/samsamq/samsa/loadgen/omb"
)

// tokenEnv holds the loadgen token when no --token-file is given (a flag
// would show it in ps).
const tokenEnv = "SAMSA_LOADGEN_TOKEN"

// runLoadgenWorker is `samsa loadgen worker`: it serves a coordinator's
// commands (loadgen/distrib) until interrupted.
func runLoadgenWorker(args []string) error {
	brokerProcs() // the generator's pacing, as loadgen's
	fs := newFlagSet("loadgen worker", "",
		"Run the shares of distributed loads a coordinator (samsa loadgen --workers) sends, each against the\n"+
			"cluster it names with this worker's own driver and client credentials (--tls*, --access-key ...).\n"+
			"Every request must carry the shared token, from --token-file or $"+tokenEnv+".")
	listen := fs.String("listen", "127.0.0.1:7878", "address to serve coordinators on (loopback by default: give this host's address to take a coordinator from elsewhere)")
	tokenFile := fs.String("token-file", "", "file holding the shared token, one line (default: $"+tokenEnv+")")
	lease := fs.Duration("lease", 30*time.Second, "stop a run whose coordinator has not been heard from for this long")
	quiet := fs.Bool("quiet", false, "leave out the runs' progress lines and summaries")
	secure := addSecureFlags(fs) // the cluster's TLS and ACL, for the samsa driver
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	token, err := loadToken(*tokenFile)
	if err != nil {
		return err
	}
	var ls labSettings
	if err := secure.apply(&ls.client); err != nil {
		return err
	}
	out := io.Writer(os.Stdout)
	if *quiet {
		out = io.Discard
	}
	w, err := distrib.NewWorker(distrib.WorkerOptions{Token: token, Lease: *lease, Out: out,
		Driver: func(ctx context.Context, spec distrib.DriverSpec) (loadgen.Driver, error) {
			return workerDriver(ctx, ls, spec)
		},
		Logf: func(format string, a ...any) { _, _ = fmt.Fprintf(os.Stderr, format+"\n", a...) }})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("loadgen worker: serving coordinators on %s\n", l.Addr())
	ctx, cancel := signalContext()
	defer cancel()
	return w.Serve(ctx, l)
}

// workerDriver makes the driver a coordinator's spec names, against the
// live cluster it names, with this worker's credentials (ls.client).
func workerDriver(ctx context.Context, ls labSettings, spec distrib.DriverSpec) (loadgen.Driver, error) {
	ls.namesrv, ls.brokerAddr, ls.natsURL = spec.NameServers, spec.Broker, spec.NATSURL
	cell := loadgen.Cell{Label: "worker", Driver: spec.Driver}
	switch spec.Driver {
	case "samsa", "rocketmq":
		if spec.NameServers == "" {
			return nil, errors.New("a worker drives a live cluster: the coordinator names no name server")
		}
	case "nats":
		if spec.NATSURL == "" {
			return nil, errors.New("a worker drives a live cluster: the coordinator names no NATS URL")
		}
		cell.Cluster.Flush = spec.Flush // the streams' sync_interval
	default:
		return nil, fmt.Errorf("driver %q does not run over workers (samsa, rocketmq, nats do)", spec.Driver)
	}
	return ls.driver(ctx, cell)
}

// loadToken reads the shared token from file (white space around it
// dropped), or from $SAMSA_LOADGEN_TOKEN without one.
func loadToken(file string) (string, error) {
	token := os.Getenv(tokenEnv)
	if file != "" {
		fi, err := os.Stat(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if fi.Size() > 4096 {
			return "", fmt.Errorf("--token-file %s: over 4 KiB, not a token", file)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			_, _ = fmt.Fprintf(os.Stderr, "loadgen: %s can be read by others (mode %v): chmod 600 it\n", file, fi.Mode().Perm())
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		return "", fmt.Errorf("a shared token is required: --token-file FILE or $%s", tokenEnv)
	}
	return token, distrib.CheckToken(token)
}

// distributed is what runLoadgen hands a distributed run.
type distributed struct {
	workers   string // --workers
	tokenFile string
	driver    string
	flush     string
	ls        labSettings
	w         loadgen.Workload
	ombW      *loadgen.OMBWorkload
	ombJSON   string
	jsonOut   string
}

// runDistributed is `samsa loadgen --workers A,B,...`: the coordinator.
func runDistributed(ctx context.Context, d distributed) error {
	token, err := loadToken(d.tokenFile)
	if err != nil {
		return err
	}
	spec := distrib.DriverSpec{Driver: d.driver, NameServers: d.ls.namesrv, Broker: d.ls.brokerAddr, NATSURL: d.ls.natsURL}
	switch d.driver {
	case "samsa", "rocketmq":
		if d.ls.namesrv == "" {
			return errors.New("--workers drive one live cluster every worker reaches: give its --namesrv")
		}
	case "nats":
		if d.ls.natsURL == "" {
			return errors.New("--workers drive one live cluster every worker reaches: give its --nats-url")
		}
		spec.Flush = d.flush
	default:
		return fmt.Errorf("--driver %s starts a server of its own: over --workers, samsa, rocketmq (--namesrv) or nats (--nats-url)", d.driver)
	}
	var workers []string
	for _, a := range strings.Split(d.workers, ",") {
		if a = strings.TrimSpace(a); a != "" {
			workers = append(workers, a)
		}
	}
	d.w.EnsureDefaults()
	fmt.Printf("loadgen: driver %s over %d workers, %s\n", d.driver, len(workers), d.w.String())
	res, err := distrib.Run(ctx, distrib.Options{Workers: workers, Token: token, Workload: d.w, Driver: spec, Out: os.Stdout})
	if err != nil {
		return err
	}
	res.Machine = resultfile.CollectMachine(d.ls.benchDir()) // the coordinator's: the workers' hosts are in res.Workers
	return finishLoadgen(res, d.ombW, d.ombJSON, d.jsonOut)
}

// finishLoadgen writes a run's OMB figures and result files, and fails
// the command when sends failed.
func finishLoadgen(res *loadgen.Result, ombW *loadgen.OMBWorkload, ombJSON, jsonOut string) error {
	if ombW != nil {
		omb.Report(os.Stdout, ombW, res)
		if ombJSON != "" {
			tr, err := omb.NewTestResult(ombW, res)
			if err != nil {
				return err
			}
			if err := tr.WriteJSON(ombJSON); err != nil {
				return err
			}
		}
	}
	if jsonOut != "" {
		if err := res.WriteJSON(jsonOut); err != nil {
			return err
		}
	}
	if res.Errors > 0 {
		return fmt.Errorf("%d sends failed", res.Errors)
	}
	return nil
}
