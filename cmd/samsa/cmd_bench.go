package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/samsamq/samsa/bench"
	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

func init() {
	register(command{name: "bench", summary: "storage lab: raw disk, storage engine, experiments, reports, regression gate", run: runBench})
}

var benchSubs = []struct {
	name, usage string
	run         func(args []string) error
}{
	{"disk", "disk --dir DIR --block BYTES --duration D --fsync every|interval|none --writers N [--json FILE] | disk --read [--read-size BYTES --block BYTES --read-method auto|odirect|fadvise]", benchDisk},
	{"loopback", "loopback [--conns N --chunk BYTES --bytes BYTES --json FILE]: the loopback TCP ceiling (bytes moved between two ends in one process, nothing else)", benchLoopback},
	{"storage", "storage --backend B --flush sync|async|none --size BYTES --writers N --duration D --dir DIR [--json FILE] [engine options]", benchStorage},
	{"run", "run EXPERIMENT_FILE [--quick] [--dir DIR] [--out results/]", benchRun},
	{"report", "report RESULT... [--out PERFORMANCE.md] [--svg-dir DIR]", benchReport},
	{"check", "check --baseline FILE [--tolerance 0.15] [--strict] RESULT", benchCheck},
	{"ab", "ab --a BINARY --b BINARY [--rounds 8] [--cmd bench|loadgen] [--metric msgs_per_sec] [--threshold 0.90] [--dir DIR] [--json FILE] -- SUBCOMMAND [FLAGS]: two binaries in alternated A-B-B-A rounds of one measuring subcommand (e.g. -- storage --backend pwrite --flush async --size 1024 --writers 1 --duration 3s --dir .benchdata/ab; with --cmd loadgen, loadgen's flags: -- --warmup 1s --duration 3s --producers 8, an embedded cluster), the median of the rounds' B/A, its 95% bootstrap interval and a verdict (--threshold 0.90)", benchAB},
}

func runBench(args []string) error {
	if len(args) > 0 {
		for _, s := range benchSubs {
			if s.name == args[0] {
				return s.run(args[1:])
			}
		}
	}
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, s := range benchSubs {
		fmt.Fprintf(&b, "  samsa bench %s\n", s.usage)
	}
	b.WriteString("every measuring subcommand takes --profile cpu|mem|block|mutex|trace --profile-dir DIR")
	return errors.New(b.String())
}

// parseInterspersed parses flags that may come after positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// bytesFlag takes 4096, 4k, 4KiB, 1m, 1MiB, 1g.
type bytesFlag struct{ v *int64 }

func (b bytesFlag) String() string {
	if b.v == nil {
		return "0"
	}
	return strconv.FormatInt(*b.v, 10)
}

func (b bytesFlag) Set(s string) error {
	n, err := parseBytes(s)
	if err == nil {
		*b.v = n
	}
	return err
}

func parseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad byte size %q (want e.g. 4096, 4KiB, 1MiB)", s)
	}
	return n * mult, nil
}

// profileFlags are --profile and --profile-dir.
type profileFlags struct{ kind, dir string }

func (p *profileFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.kind, "profile", "", "profile: cpu, mem, block, mutex or trace (github.com/pkg/profile)")
	fs.StringVar(&p.dir, "profile-dir", "profiles", "directory for profiles")
}

func (p *profileFlags) start() (func(), error) {
	stop, err := bench.StartProfile(p.kind, p.dir)
	if err != nil {
		return nil, err
	}
	return func() {
		if path := stop(); path != "" {
			fmt.Fprintf(os.Stderr, "profile: %s\n", path)
		}
	}, nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// commandLine is the command as result files and PERFORMANCE.md record
// it: paths under the working directory relative to it.
func commandLine() string {
	return resultfile.RelativePaths("samsa " + strings.Join(os.Args[1:], " "))
}

func writeJSONFile(path string, v interface{ WriteJSON(string) error }) error {
	if path == "" {
		return nil
	}
	if err := v.WriteJSON(path); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	return nil
}

func benchDisk(args []string) error {
	fs := flag.NewFlagSet("bench disk", flag.ContinueOnError)
	var o bench.DiskOptions
	var block, fileSize int64 = 4096, 0
	var fsync, jsonPath string
	var prof profileFlags
	fs.StringVar(&o.Dir, "dir", ".benchdata", "directory on the disk to measure")
	fs.Var(bytesFlag{&block}, "block", "bytes per write")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&o.Warmup, "warmup", 0, "unrecorded time before measuring")
	fs.StringVar(&fsync, "fsync", "every", "every | interval | none")
	fs.DurationVar(&o.Interval, "interval", 500*time.Millisecond, "fsync interval (--fsync interval)")
	fs.IntVar(&o.Writers, "writers", 1, "concurrent writers")
	fs.Var(bytesFlag{&fileSize}, "file-size", "preallocated file size (default 2GiB)")
	fs.DurationVar(&o.ProbeDuration, "probe", time.Second, "single-fsync probe duration (negative: none)")
	fs.StringVar(&jsonPath, "json", "", "write the result as JSON here")
	read := fs.Bool("read", false, "measure the raw sequential read rate instead (a file written, dropped from the page cache, read once; --block default 1MiB)")
	var readSize int64 = 1 << 30
	fs.Var(bytesFlag{&readSize}, "read-size", "--read: bytes written then read")
	readMethod := fs.String("read-method", bench.ReadAuto, "--read: auto | odirect | fadvise")
	prof.register(fs)
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *read {
		blockSet := false
		fs.Visit(func(f *flag.Flag) { blockSet = blockSet || f.Name == "block" })
		ro := bench.DiskReadOptions{Dir: o.Dir, Size: readSize, Method: *readMethod}
		if blockSet {
			ro.Block = int(block)
		}
		return benchDiskRead(ro, jsonPath)
	}
	o.Block, o.FileSize, o.Fsync = int(block), fileSize, bench.FsyncPolicy(fsync)
	stop, err := prof.start()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := bench.RunDisk(ctx, o)
	stop()
	if err != nil {
		return err
	}
	res.Machine = resultfile.CollectMachine(o.Dir)
	fmt.Printf("disk %s\n  %.0f writes/s  %.1f MB/s  p50 %dµs  p99 %dµs  p99.9 %dµs  max %dµs  fsyncs %d\n",
		res.Config, res.MsgsPerSec, res.MBPerSec, res.LatencyUs.P50, res.LatencyUs.P99, res.LatencyUs.P999, res.LatencyUs.Max, res.Fsyncs)
	if p := res.FsyncProbeUs; p != nil {
		fmt.Printf("  single fdatasync: p50 %dµs  p99 %dµs  max %dµs (%d samples)\n", p.P50, p.P99, p.Max, p.Count)
	}
	fmt.Printf("  %s\n", res.Machine)
	return writeJSONFile(jsonPath, res)
}

// benchDiskRead is bench disk --read.
func benchDiskRead(o bench.DiskReadOptions, jsonPath string) error {
	ctx, cancel := signalContext()
	defer cancel()
	res, err := bench.RunDiskRead(ctx, o)
	if err != nil {
		return err
	}
	res.Machine = resultfile.CollectMachine(o.Dir)
	fmt.Printf("disk %s\n  %.1f MB/s sequential read (%s; %d bytes resident before)  p50 %dµs  p99 %dµs  max %dµs per read\n",
		res.Config, res.MBPerSec, res.Method, res.ResidentBefore, res.LatencyUs.P50, res.LatencyUs.P99, res.LatencyUs.Max)
	if res.MethodNote != "" {
		fmt.Printf("  %s\n", res.MethodNote)
	}
	fmt.Printf("  %s\n", res.Machine)
	return writeJSONFile(jsonPath, res)
}

// benchLoopback is bench loopback.
func benchLoopback(args []string) error {
	fs := flag.NewFlagSet("bench loopback", flag.ContinueOnError)
	var o bench.LoopbackOptions
	var chunk, total int64 = 64 << 10, 1 << 30
	var jsonPath string
	fs.IntVar(&o.Conns, "conns", 1, "TCP connections carrying the bytes at once")
	fs.Var(bytesFlag{&chunk}, "chunk", "bytes per write")
	fs.Var(bytesFlag{&total}, "bytes", "bytes all connections carry together")
	fs.StringVar(&jsonPath, "json", "", "write the result as JSON here")
	var prof profileFlags
	prof.register(fs)
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	o.Chunk, o.Bytes = int(chunk), total
	stop, err := prof.start()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := bench.RunLoopback(ctx, o)
	stop()
	if err != nil {
		return err
	}
	fmt.Printf("loopback conns=%d chunk=%d\n  %.1f MB/s over 127.0.0.1 (%d bytes in %.2fs)\n",
		res.Options.Conns, res.Options.Chunk, res.MBPerSec, res.Bytes, res.MeasuredSeconds)
	return writeJSONFile(jsonPath, res)
}

func benchStorage(args []string) error {
	fs := flag.NewFlagSet("bench storage", flag.ContinueOnError)
	var o bench.StorageOptions
	var size int64 = 1024
	var jsonPath string
	var prof profileFlags
	fs.StringVar(&o.Backend, "backend", "pwrite", "pwrite | mmap | odirect | uring")
	fs.StringVar(&o.Flush, "flush", "async", "sync (group commit) | async | none")
	fs.Var(bytesFlag{&size}, "size", "message body bytes")
	fs.IntVar(&o.Writers, "writers", 1, "concurrent closed-loop appenders")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "unrecorded time before measuring")
	fs.StringVar(&o.Dir, "dir", ".benchdata", "directory for the store (a fresh one is made inside)")
	fs.IntVar(&o.Queues, "queues", 8, "queues the writers spread over")
	fs.Var(bytesFlag{&o.SegmentSize}, "segment-size", "CommitLog segment bytes (0: engine default)")
	fs.BoolVar(&o.Preallocate, "preallocate", false, "fallocate new segments")
	fs.Var(bytesFlag{&o.MaxBatchBytes}, "max-batch-bytes", "sync: end a group's linger at this many bytes (0: unbounded)")
	fs.DurationVar(&o.MinInterval, "min-interval", 0, "sync: least time between fsyncs (linger)")
	fs.DurationVar(&o.MaxGather, "max-gather", 0, "sync: longest a round waits for released writers to return (0: engine default, negative: off)")
	fs.IntVar(&o.MaxPending, "max-pending", 0, "sync: bound on waiting appends (0: engine default)")
	fs.DurationVar(&o.Interval, "interval", 0, "async: flush interval (0: engine default)")
	fs.IntVar(&o.DirtyPages, "dirty-pages", 0, "async: flush at this many dirty pages (0: engine default)")
	fs.BoolVar(&o.NoStage, "no-stage", false, "async/none, pwrite/odirect/uring: no stage files (storage Options.NoStage): hand each append to the kernel with write calls instead of copying it into a shared mapping")
	fs.BoolVar(&o.AckBuffered, "ack-buffered", false, "async/none: acknowledge from the backend's user-space buffer (durability \"memory\": a process crash may lose acknowledged appends)")
	fs.StringVar(&jsonPath, "json", "", "write the result as JSON here")
	prof.register(fs)
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	o.Size = int(size)
	stop, err := prof.start()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := bench.RunStorage(ctx, o)
	stop()
	if err != nil {
		return err
	}
	res.Machine = resultfile.CollectMachine(o.Dir)
	fmt.Printf("storage %s\n  %s\n", res.Config, res.Line())
	if res.ProcIO != nil && res.Appends > 0 {
		fmt.Printf("  process: %.0f write syscalls/1k appends, %.1f MB to the block layer\n",
			float64(res.ProcIO.SysCW)*1000/float64(res.Appends), float64(res.ProcIO.WriteBytes)/1e6)
	}
	if d := res.Device; d != nil {
		fmt.Printf("  device %s (whole device, every process): %d writes (%.0f/s), %.1f MB\n",
			d.Device, d.WriteIOs, d.WritesPerSec, float64(d.WriteBytes)/1e6)
	} else if res.DeviceNote != "" {
		fmt.Printf("  device: %s\n", res.DeviceNote)
	}
	if res.FirstError != "" {
		fmt.Printf("  first error: %s\n", res.FirstError)
	}
	fmt.Printf("  %s\n  %s\n  %s\n", res.DurabilityNote, res.StoreConfig, res.Machine)
	return writeJSONFile(jsonPath, res)
}

func benchRun(args []string) error {
	fs := flag.NewFlagSet("bench run", flag.ContinueOnError)
	var quick, gate bool
	var dir, out, last string
	var prof profileFlags
	fs.BoolVar(&quick, "quick", false, "use the experiment's quick settings")
	fs.StringVar(&dir, "dir", ".benchdata", "data directory (on the disk to measure)")
	fs.StringVar(&out, "out", "results", "results root: writes <out>/<experiment>/<host>-<UTC>.json")
	fs.StringVar(&last, "last", "", "also write the result's path into this file (for scripts)")
	fs.BoolVar(&gate, "gate", false, "exit 1 when a cell misses one of the experiment's targets")
	prof.register(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "usage: samsa bench run EXPERIMENT_FILE [flags]; --profile profiles each storage run into --profile-dir/<cell>_r<round>/")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("bench run: want one experiment file")
	}
	if err := bench.CheckProfileKind(prof.kind); err != nil {
		return err
	}
	// Storage experiments only: the storage kind's own check of the file
	// says where the others run.
	e, err := labKinds(labSettings{}, prof)["storage"].Load(pos[0])
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	path, err := lab.RunExperiment(ctx, e, lab.Options{
		Env: lab.Env{Quick: quick, DataDir: dir, Command: commandLine(), Progress: os.Stdout},
		Out: out, Gate: gate})
	if path != "" && last != "" {
		return errors.Join(err, os.WriteFile(last, []byte(path+"\n"), 0o644))
	}
	return err
}

func benchReport(args []string) error {
	fs := flag.NewFlagSet("bench report", flag.ContinueOnError)
	o := lab.ReportOptions{Progress: os.Stdout}
	fs.StringVar(&o.Out, "out", "", "Markdown file whose generated sections to rewrite (e.g. PERFORMANCE.md); empty: stdout")
	fs.StringVar(&o.SVGDir, "svg-dir", "", "directory for SVG charts (default: each result file's directory)")
	fs.BoolVar(&o.NoCharts, "no-charts", false, "skip the SVG charts")
	fs.BoolVar(&o.HTML, "html", false, "also write each result's section as an HTML page beside the result file (.html), charts included")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("bench report: want one or more result files")
	}
	o.Command = commandLine()
	order, sections, err := labKinds(labSettings{}, profileFlags{}).Report(pos, o)
	if err != nil {
		return err
	}
	if o.Out == "" {
		for _, n := range order {
			fmt.Println(sections[n])
		}
		return nil
	}
	fmt.Printf("updated %s: %s\n", o.Out, strings.Join(order, ", "))
	return nil
}

func benchCheck(args []string) error {
	fs := flag.NewFlagSet("bench check", flag.ContinueOnError)
	var baseline string
	var o bench.CheckOptions
	fs.StringVar(&baseline, "baseline", "", "baseline result file (required)")
	fs.Float64Var(&o.Tolerance, "tolerance", 0.15, "allowed relative change of a ratio's median before it counts as a regression")
	fs.BoolVar(&o.Strict, "strict", false, "count a worse median as a regression even when the repeats overlap the baseline's")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if baseline == "" || len(pos) != 1 {
		return errors.New("bench check: want --baseline FILE and one result file")
	}
	base, err := bench.ReadResult(baseline)
	if err != nil {
		return err
	}
	cur, err := bench.ReadResult(pos[0])
	if err != nil {
		return err
	}
	rep := bench.Check(base, cur, o)
	fmt.Printf("check %s against %s\n", pos[0], baseline)
	if err := rep.Print(os.Stdout); err != nil {
		return err
	}
	if n := rep.Regressions(); n > 0 {
		return fmt.Errorf("%d regressions beyond %.0f%%", n, 100*o.Tolerance)
	}
	return nil
}

func benchAB(args []string) error {
	fs := flag.NewFlagSet("bench ab", flag.ContinueOnError)
	var o bench.ABOptions
	var jsonPath string
	fs.StringVar(&o.A, "a", "", "the binary measured against (required)")
	fs.StringVar(&o.B, "b", "", "the binary measured (required): ratios are B/A")
	fs.IntVar(&o.Rounds, "rounds", 8, "rounds; each runs both binaries, A first in odd rounds, B first in even ones")
	fs.StringVar(&o.Command, "cmd", "bench", "the samsa command each run starts: bench (what follows -- is a bench subcommand) or loadgen (what follows -- are loadgen's flags: one workload, an embedded cluster without --namesrv)")
	fs.StringVar(&o.Metric, "metric", "msgs_per_sec", "the numeric field of the run's JSON result compared: a top-level name or a dotted path (send_latency_us.p99)")
	fs.StringVar(&o.Dir, "dir", "", "keep each run's JSON result here (default: a temporary directory, removed)")
	fs.StringVar(&jsonPath, "json", "", "write the rounds and their spread as JSON")
	threshold := fs.Float64("threshold", bench.DefaultABThreshold, "verdict: a regression when the median B/A's whole 95% bootstrap interval is below this")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Args = fs.Args() // flag stops at "--" and leaves what follows
	o.Log = os.Stdout
	ctx, cancel := signalContext()
	defer cancel()
	res, err := bench.RunAB(ctx, o)
	if err != nil {
		return err
	}
	fmt.Println(res.Summary())
	fmt.Printf("verdict: %s (a regression only when the whole interval is below %.2f×)\n", res.Verdict(*threshold), *threshold)
	return writeJSONFile(jsonPath, res)
}
