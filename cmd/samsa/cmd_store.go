package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/samsamq/samsa/ha"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

// samsa store verify|repair DIR: a stopped store's files, checked or
// mended (storage.Verify, storage.Repair). Exit status: 0 clean (or
// repaired), 1 corruption found, 2 usage or I/O error (the store in use
// included).
func init() {
	register(command{name: "store", summary: "verify or repair a stopped store's files (exit 0 ok, 1 corrupt, 2 error)",
		run: func(args []string) error {
			if code := runStore(args, os.Stdout, os.Stderr); code != 0 {
				os.Exit(code)
			}
			return nil
		}})
}

const storeUsage = `usage: samsa store <subcommand> [flags] DIR

subcommands:
  verify DIR   check every segment record by record, the consume queues against
               the log, the checkpoint, and the log's end against what the
               group acknowledged (DIR/ha/acked, or --acked) (read-only; exit 1
               on corruption)
  repair DIR   make a store that will not open openable: cut the log at its last
               whole valid record, keep what follows in DIR/lost+found, trim the
               consume queues, write a checkpoint that makes Open recover
               (--dry-run: print the plan only)

Both take the store's LOCK: stop the broker first.
`

// runStore is the store command; it returns the exit status.
func runStore(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, storeUsage)
		return 2
	}
	switch args[0] {
	case "verify":
		return storeVerify(args[1:], stdout, stderr)
	case "repair":
		return storeRepair(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		if _, err := fmt.Fprint(stdout, storeUsage); err != nil {
			_, _ = fmt.Fprintf(stderr, "samsa store: %v\n", err)
			return 2
		}
		return 0
	}
	_, _ = fmt.Fprintf(stderr, "samsa store: unknown subcommand %q\n\n%s", args[0], storeUsage)
	return 2
}

// storeFlags parses a subcommand's flags and its one DIR argument: -h
// prints the usage to stdout (code 0), a bad command line says so on
// stderr (code 2); -1 means go on.
func storeFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (dir string, code int) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	about := "Check a stopped store (read-only)."
	if fs.Name() == "store repair" {
		about = "Make a stopped store that will not open openable (--dry-run: the plan only)."
	}
	rest, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout, fs, "DIR", about)
		return "", 0
	}
	if err == nil && len(rest) != 1 {
		err = fmt.Errorf("want one DIR, got %d arguments", len(rest))
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "samsa %s: %v\nRun 'samsa help %s' for usage.\n", fs.Name(), err, fs.Name())
		return "", 2
	}
	return rest[0], -1
}

func storeVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("store verify", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	segSize := fs.Int64("segment-size", 0, "the store's segment size (default: from the checkpoint or the segment names)")
	maxProblems := fs.Int("max-problems", 1000, "list at most this many problems (the counts stay exact)")
	acked := fs.Int64("acked", 0, "an offset the store's group acknowledged (another replica's, as its verify prints it): a log that ends below it is reported; "+
		"default: the broker's own mark, DIR/ha/acked")
	dir, code := storeFlags(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	opts := storage.VerifyOptions{Dir: dir, SegmentSize: *segSize, MaxProblems: *maxProblems, Acked: *acked, AckedFrom: "--acked"}
	if *acked <= 0 {
		path := filepath.Join(dir, "ha", "acked")
		m, err := ha.OpenAckedMark(vfs.Default, path)
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "samsa store verify: %v\n", err)
			return 2
		}
		opts.Acked, opts.AckedFrom = m.Value(), "this broker's mark, "+path
	}
	rep, err := storage.Verify(opts)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "samsa store verify: %v\n", err)
		return 2
	}
	if err := writeReport(stdout, &rep, *asJSON); err != nil {
		_, _ = fmt.Fprintf(stderr, "samsa store verify: writing the report: %v\n", err)
		return 2
	}
	if rep.Corrupt() {
		return 1
	}
	return 0
}

func storeRepair(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("store repair", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	dryRun := fs.Bool("dry-run", false, "print the plan; change nothing")
	segSize := fs.Int64("segment-size", 0, "the store's segment size (default: from the checkpoint or the segment names)")
	holes := fs.Bool("holes", false, "a store with no replica: write a hole over a damaged record that valid records follow, keeping them, instead of cutting the log there (a replica should cut and copy the rest from its master)")
	dir, code := storeFlags(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rep, err := storage.Repair(storage.RepairOptions{Dir: dir, SegmentSize: *segSize, DryRun: *dryRun, Holes: *holes, Logger: log})
	if werr := writeReport(stdout, &rep, *asJSON); werr != nil && err == nil {
		err = fmt.Errorf("writing the report: %w", werr)
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "samsa store repair: %v\n", err)
		return 2
	}
	return 0
}

// writeReport writes a verify or repair report as text, or as indented
// JSON.
func writeReport(w io.Writer, rep interface{ WriteText(io.Writer) error }, asJSON bool) error {
	if !asJSON {
		return rep.WriteText(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
