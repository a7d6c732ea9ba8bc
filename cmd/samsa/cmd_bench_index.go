package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/samsamq/samsa/bench"
)

func init() {
	benchSubs = append(benchSubs, struct {
		name, usage string
		run         func(args []string) error
	}{"index", "index [--messages 10000000] [--lookups N] [--dir DIR] [--reopen] [--json FILE]: the message key index, lookup latency", benchIndex})
}

// benchIndex fills a key index through package storage/index and times
// lookups (HDR): the index target is p99 <= 5 ms at 10 million messages.
func benchIndex(args []string) error {
	fs := flag.NewFlagSet("bench index", flag.ContinueOnError)
	var o bench.IndexOptions
	fs.IntVar(&o.Messages, "messages", 10_000_000, "messages indexed (two keys each: a unique id and a shared business key)")
	fs.IntVar(&o.KeyShare, "key-share", 4, "messages sharing one business key")
	fs.IntVar(&o.Lookups, "lookups", 300_000, "lookups timed (unique ids, business keys, misses)")
	fs.IntVar(&o.MaxHashSlots, "max-hash-slots", 0, "hash slots per file (default 5,000,000)")
	fs.IntVar(&o.MaxEntries, "max-entries", 0, "keys per file (default 20,000,000)")
	fs.BoolVar(&o.Reopen, "reopen", false, "close and reopen the index before the lookups")
	fs.StringVar(&o.Dir, "dir", os.TempDir(), "where to build the index (removed afterwards)")
	jsonOut := fs.String("json", "", "also write the result as JSON to FILE")
	var prof profileFlags
	prof.register(fs)
	if rest, err := parseInterspersed(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	stop, err := prof.start()
	if err != nil {
		return err
	}
	res, err := bench.IndexLookup(o)
	stop()
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", res.Options)
	fmt.Fprintf(&b, "indexed %d messages (%d keys) in %.1fs: %.0f msg/s; %d files, %.0f MiB\n", res.Messages, res.Entries,
		res.FillSeconds, res.PutsPerSec, res.Files, float64(res.DiskBytes)/(1<<20))
	row := func(name string, l bench.IndexLatency) {
		fmt.Fprintf(&b, "%-7s n=%-7d mean %7.1f µs  p50 %7.1f  p99 %7.1f  p99.9 %7.1f  max %8.1f µs\n", name, l.Count, l.Mean, l.P50, l.P99, l.P999, l.Max)
	}
	row("lookup", res.All)
	for _, k := range []string{"uniq", "key", "miss"} {
		row(k, res.ByKind[k])
	}
	verdict := "PASS"
	if res.All.P99 > 5000 {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "target p99 <= 5 ms: %s\n", verdict)
	fmt.Print(b.String())
	if *jsonOut != "" {
		j, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonOut, append(j, '\n'), 0o644)
	}
	return nil
}
