package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen"
)

func init() {
	register(command{name: "loadgen", summary: "drive a cluster with a workload (or run an e2e experiment file); loadgen worker: serve a distributed run's coordinator", run: runLoadgen})
}

func runLoadgen(args []string) (err error) {
	if len(args) > 0 && args[0] == "worker" {
		return runLoadgenWorker(args[1:])
	}
	brokerProcs() // the embedded cluster's, and the generator's own pacing
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	var w loadgen.Workload
	namesrv := fs.String("namesrv", "", "name server address(es), ;-separated; empty starts an embedded cluster (samsa dev)")
	embedded := fs.Bool("embedded", false, "start an embedded name server + broker on loopback (the default when --namesrv is empty)")
	brokerAddr := fs.String("broker", "", "broker address for topic creation (default: from the cluster's route)")
	driver := fs.String("driver", "samsa", "driver: samsa (our client), rocketmq (the official Go client), nats (NATS JetStream), redis (Redis streams), rabbitmq (RabbitMQ; --flush sync: quorum queues, async: streams), kafka (a Kafka-API cluster at --brokers, on franz-go)")
	flush := fs.String("flush", "async", "embedded cluster flush policy: sync (group commit) or async; for nats, sync = sync_interval always; redis, appendfsync always (async: everysec); rabbitmq, quorum queues (async: streams)")
	backendName := fs.String("backend", "", "embedded broker store backend (pwrite, mmap, odirect, uring)")
	var repl loadgen.Cluster
	fs.StringVar(&repl.Replication, "replication", "none", "embedded cluster: none, async (ASYNC_MASTER) or sync (SYNC_MASTER) with --slaves slaves")
	fs.IntVar(&repl.Slaves, "slaves", 0, "embedded cluster with --replication: slaves (default 1)")
	fs.Float64Var(&repl.LinkDelayMs, "link-delay-ms", 0, "embedded cluster with --replication: one-way delay on the master→slave link, ms")
	fs.StringVar(&repl.LinkMethod, "link-method", "", "with --link-delay-ms: auto (default), proxy or netem")
	natsURL := fs.String("nats-url", "", "nats driver: a running server's URL (default: start one in-process)")
	secure := addSecureFlags(fs) // a live cluster's TLS and ACL (our driver; TLS for kafka too)
	kafka := addKafkaFlags(fs)
	dataDir := fs.String("dir", "", "embedded cluster data dir (default: a temp dir, removed after)")
	fs.StringVar(&w.TopicPrefix, "topic", "loadgen", "topic name prefix (topics are <prefix>-<i>)")
	fs.IntVar(&w.Topics, "topics", 1, "number of topics")
	fs.IntVar(&w.QueuesPerTopic, "queues", 8, "queues per topic")
	fs.IntVar(&w.MessageSize, "size", 1024, "message size in bytes (>= 16)")
	fs.StringVar(&w.PayloadFile, "payload-file", "", "payload bytes from this file (cut or repeated to --size)")
	fs.IntVar(&w.Producers, "producers", 1, "producers per topic")
	fs.IntVar(&w.Consumers, "consumers", 1, "consumers per group per topic (0 = produce only)")
	fs.IntVar(&w.ConsumerGroups, "groups", 1, "consumer groups per topic")
	fs.Float64Var(&w.Rate, "rate", 0, "target total rate in msg/s; 0 = as fast as it goes (closed loop)")
	fs.DurationVar(&w.Warmup, "warmup", 5*time.Second, "warm-up, not measured")
	fs.DurationVar(&w.Duration, "duration", 30*time.Second, "measured duration")
	send := fs.String("send", "sync", "send mode: sync, async or batch")
	fs.IntVar(&w.BatchSize, "batch-size", 32, "batch mode: messages per batch")
	fs.DurationVar(&w.BatchLinger, "linger", time.Millisecond, "batch mode: how long a batch waits to fill")
	fs.IntVar(&w.MaxInFlight, "inflight", 1024, "async/batch: unacknowledged sends per producer")
	consume := fs.String("consume", "long-poll", "consume mode: long-poll or pull")
	fs.DurationVar(&w.PullInterval, "pull-interval", 100*time.Millisecond, "pull mode: wait after an empty pull")
	fs.IntVar(&w.KeyCount, "keys", 0, "give messages keys cycling over this many values (0 = none)")
	fs.DurationVar(&w.ReportInterval, "report-interval", 5*time.Second, "progress line interval")
	fs.DurationVar(&w.Drain, "drain", 10*time.Second, "after producing, wait this long at most for consumers to catch up")
	jsonOut := fs.String("json", "", "write the result as JSON to this file")
	hdrOut := fs.String("hdr", "", "write the interval histograms (HdrHistogram log format) to this file")
	ombFile := fs.String("omb-workload", "", "run an OpenMessaging Benchmark workload file (workloads/*.yaml) with OMB's meaning; --rate, --warmup, --duration and --omb-backlog given here replace its figures; prints OMB's headline figures")
	ombJSON := fs.String("omb-json", "", "with --omb-workload: also write the result as OMB's JSON result file")
	ombBacklog := fs.Int64("omb-backlog", 0, "with --omb-workload: the backlog phase's size in bytes in place of consumerBacklogSizeGB (where the workload asks for one)")
	workers := fs.String("workers", "", "run the workload over these loadgen workers (host:port,...; samsa loadgen worker), one share each, against the live cluster --namesrv or --nats-url names; the shared token from --token-file or $"+tokenEnv)
	tokenFile := fs.String("token-file", "", "with --workers: file holding the workers' shared token (default: $"+tokenEnv+")")
	experiment := fs.String("experiment", "", "run an e2e experiment file (experiments/*.json) instead of one workload")
	quick := fs.Bool("quick", false, "with --experiment: the quick durations")
	out := fs.String("out", "results", "with --experiment: results directory")
	perf := fs.String("performance", "", "with --experiment: also rewrite this file's generated section (e.g. PERFORMANCE.md)")
	seed := fs.Uint64("seed", 0, "with a durability-kill or replication-durability experiment: the kill moments' seed (0: the file's, or the clock)")
	gate := fs.Bool("gate", false, "with --experiment: exit 1 when a target is missed (durability-kill, replication-durability: a cell's; backlog-drain: drain or p99; replication-catchup: the median catch-up ratio; storage: a cell's; e2e: a comparison with a target, or one whose cell was skipped; chaos fails on a missed safety target without it)")
	var prof profileFlags
	prof.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	stop, err := prof.start()
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := signalContext()
	defer cancel()

	ls := labSettings{namesrv: *namesrv, embedded: *embedded || *namesrv == "", brokerAddr: *brokerAddr,
		natsURL: *natsURL, dataDir: *dataDir, backend: *backendName}
	if err := secure.apply(&ls.client); err != nil {
		return err
	}
	kafka.apply(&ls)
	if *workers != "" {
		var bad []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "experiment", "embedded", "hdr", "replication", "slaves", "link-delay-ms", "link-method", "dir", "backend",
				"tls", "tls-ca", "tls-cert", "tls-key", "tls-server-name", "tls-insecure", "access-key", "secret-key":
				bad = append(bad, "--"+f.Name)
			}
		})
		if len(bad) > 0 {
			return fmt.Errorf("--workers drive a live cluster from the workers, each with its own credentials: %s do not apply (--hdr: the merged intervals are in --json)", strings.Join(bad, ", "))
		}
	} else if *tokenFile != "" {
		return errors.New("--token-file goes with --workers")
	}
	if *experiment != "" {
		var runFlags []string
		fs.Visit(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, "kafka-") {
				runFlags = append(runFlags, "--"+f.Name)
			}
		})
		if len(runFlags) > 0 {
			return fmt.Errorf("%s do not apply with --experiment: an experiment's kafka cells carry their own settings (\"kafka\" in the cell); --brokers and the --sasl and --tls flags do apply", strings.Join(runFlags, ", "))
		}
		bin, _ := os.Executable() // the kill loops and chaos start this binary; without it they say so
		_, err := labKinds(ls, profileFlags{}).Run(ctx, *experiment, lab.Options{
			Env: lab.Env{Quick: *quick, Seed: *seed, DataDir: *dataDir, Binary: bin, Command: commandLine(), Progress: os.Stdout},
			Out: *out, Performance: *perf, Gate: *gate})
		return err
	}
	w.SendMode, w.ConsumeMode = loadgen.SendMode(*send), loadgen.ConsumeMode(*consume)
	if w.Consumers == 0 {
		w.NoConsumers = true
	}
	var ombW *loadgen.OMBWorkload
	if *ombFile != "" {
		if ombW, err = loadgen.LoadOMBWorkload(*ombFile); err != nil {
			return err
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		var sc loadgen.OMBScale
		if set["warmup"] {
			sc.Warmup = w.Warmup
		}
		if set["duration"] {
			sc.Duration = w.Duration
		}
		if set["rate"] {
			sc.Rate = w.Rate
		}
		sc.BacklogBytes = *ombBacklog
		if w, err = ombW.Workload(sc); err != nil {
			return err
		}
	} else if *ombJSON != "" || *ombBacklog != 0 {
		return errors.New("--omb-json and --omb-backlog go with --omb-workload")
	}
	if *workers != "" {
		return runDistributed(ctx, distributed{workers: *workers, tokenFile: *tokenFile, driver: *driver, flush: *flush,
			ls: ls, w: w, ombW: ombW, ombJSON: *ombJSON, jsonOut: *jsonOut})
	}
	repl.Flush, repl.Backend = *flush, *backendName
	if repl.Kafka, err = kafka.settings(); err != nil {
		return err
	}
	if err := errors.Join(repl.EnsureReplication(*driver), repl.EnsureKafka(*driver)); err != nil {
		return err
	}
	cell := loadgen.Cell{Label: "cli", Driver: *driver, Cluster: repl, Workload: w}
	d, err := ls.driver(ctx, cell)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close the %s driver: %w", *driver, cerr))
		}
	}()
	opts := loadgen.Options{Out: os.Stdout}
	if *hdrOut != "" {
		f, err := os.Create(*hdrOut)
		if err != nil {
			return err
		}
		defer func() {
			// The histogram log was written: its Close error can be a write's.
			if cerr := f.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("--hdr-out: %w", cerr))
			}
		}()
		opts.HDRLog = f
	}
	w.EnsureDefaults()
	fmt.Printf("loadgen: driver %s, %s\n", d.Name(), w.String())
	if *driver == "kafka" {
		fmt.Printf("loadgen: kafka %s\n", repl.Kafka.String())
	}
	res, err := loadgen.Run(ctx, d, w, opts)
	if err != nil {
		return err
	}
	res.Machine = resultfile.CollectMachine(ls.benchDir())
	return finishLoadgen(res, ombW, *ombJSON, *jsonOut)
}
