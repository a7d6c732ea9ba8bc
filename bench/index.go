package bench

import (
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/storage/index"
	"github.com/samsamq/samsa/storage/vfs"
)

// IndexOptions configure IndexLookup: fill a message key index directly
// (package storage/index, no broker) and time lookups.
type IndexOptions struct {
	// Dir is where the index is built (its files are removed at the end).
	Dir string
	// Messages to index. Default 10,000,000. Each has a unique id
	// (UNIQ_KEY) and one business key shared by KeyShare messages: two
	// entries a message, as a RocketMQ producer setting KEYS makes.
	Messages int
	// KeyShare is how many messages share a business key. Default 4.
	KeyShare int
	// Lookups timed, a third each: a unique id (one hit), a business key
	// (KeyShare hits), a key never indexed (a miss). Default 300,000.
	Lookups int
	// MaxHashSlots and MaxEntries: the index's (default RocketMQ's
	// 5,000,000 and 20,000,000).
	MaxHashSlots, MaxEntries int
	// Reopen closes and reopens the index before the lookups (the full
	// files' slot tables are then read from the files, not memory).
	Reopen bool
	Seed   int64
}

// IndexLatency is a lookup latency summary in microseconds.
type IndexLatency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   float64 `json:"p50_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p999_us"`
	Max   float64 `json:"max_us"`
}

// IndexResult is what IndexLookup measured.
type IndexResult struct {
	Options     string                  `json:"options"`
	Machine     resultfile.Machine      `json:"machine"`
	Messages    int                     `json:"messages"`
	Entries     int64                   `json:"entries"`
	Files       int                     `json:"files"`
	DiskBytes   int64                   `json:"disk_bytes"`
	FillSeconds float64                 `json:"fill_seconds"`
	PutsPerSec  float64                 `json:"messages_per_second"`
	All         IndexLatency            `json:"lookup"`
	ByKind      map[string]IndexLatency `json:"lookup_by_kind"`
}

func (o *IndexOptions) ensureDefaults() {
	if o.Messages == 0 {
		o.Messages = 10_000_000
	}
	if o.KeyShare == 0 {
		o.KeyShare = 4
	}
	if o.Lookups == 0 {
		o.Lookups = 300_000
	}
	if o.MaxHashSlots == 0 {
		o.MaxHashSlots = index.DefaultMaxHashSlots
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = index.DefaultMaxEntries
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

func (o IndexOptions) String() string {
	return fmt.Sprintf("bench.IndexOptions{Messages: %d, KeyShare: %d, Lookups: %d, MaxHashSlots: %d, MaxEntries: %d, Reopen: %t, Seed: %d}",
		o.Messages, o.KeyShare, o.Lookups, o.MaxHashSlots, o.MaxEntries, o.Reopen, o.Seed)
}

const (
	indexTopic   = "bench-topic"
	indexMsgSize = 1024 // the log offsets step by a 1 KiB record
)

func uniqKey(i int) []byte { return []byte(fmt.Sprintf("7F000001%08X%016X", i>>32, i)) }
func bizKey(i, share int) []byte {
	return strconv.AppendInt([]byte("order-"), int64(i/share), 10)
}

// IndexLookup builds the index and times the lookups (each a
// Lookup of every candidate: what the store then verifies is left out).
func IndexLookup(o IndexOptions) (IndexResult, error) {
	o.ensureDefaults()
	res := IndexResult{Options: o.String(), Machine: *resultfile.CollectMachine(o.Dir), Messages: o.Messages, ByKind: map[string]IndexLatency{}}
	dir, err := os.MkdirTemp(o.Dir, "index-bench-")
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // scratch: nothing in it is kept
	opts := index.Options{FS: vfs.Default, Dir: filepath.Join(dir, "index"), MaxHashSlots: o.MaxHashSlots, MaxEntries: o.MaxEntries,
		Logger: slog.New(slog.DiscardHandler)}
	x, err := index.Open(opts)
	if err != nil {
		return res, err
	}
	defer func() { _ = x.Close() }() // removed with dir
	base := time.Now().Add(-time.Hour).UnixMilli()
	ts := func(i int) int64 { return base + int64(i)*3_600_000/int64(o.Messages) } // an hour of traffic
	start := time.Now()
	hashes := make([]uint32, 2)
	for i := range o.Messages {
		hashes[0] = index.Hash(indexTopic, uniqKey(i))
		hashes[1] = index.Hash(indexTopic, bizKey(i, o.KeyShare))
		phys := int64(i) * indexMsgSize
		if err := x.Put(phys, phys+indexMsgSize, ts(i), hashes); err != nil {
			return res, err
		}
		if i%1_000_000 == 999_999 {
			if err := x.Flush(); err != nil { // as the store's checkpoint does
				return res, err
			}
		}
	}
	if err := x.Flush(); err != nil {
		return res, err
	}
	res.FillSeconds = time.Since(start).Seconds()
	res.PutsPerSec = float64(o.Messages) / res.FillSeconds
	res.Entries = 2 * int64(o.Messages)
	if o.Reopen {
		if err := x.Close(); err != nil {
			return res, err
		}
		if x, err = index.Open(opts); err != nil {
			return res, err
		}
	}
	names, _ := os.ReadDir(opts.Dir)
	for _, n := range names {
		if fi, err := n.Info(); err == nil && n.Name() != "checkpoint" {
			res.Files++
			res.DiskBytes += fi.Size()
		}
	}

	rng := rand.New(rand.NewSource(o.Seed))
	all := hdr.New(1, int64(10*time.Second), 3)
	kinds := []string{"uniq", "key", "miss"}
	hs := map[string]*hdr.Histogram{}
	for _, k := range kinds {
		hs[k] = hdr.New(1, int64(10*time.Second), 3)
	}
	for n := range o.Lookups {
		kind := kinds[n%3]
		i := rng.Intn(o.Messages)
		var key []byte
		want := 0
		switch kind {
		case "uniq":
			key, want = uniqKey(i), 1
		case "key":
			key, want = bizKey(i, o.KeyShare), 1
		default:
			key = []byte(fmt.Sprintf("absent-%d", i))
		}
		t0 := time.Now()
		got, err := x.Lookup(index.Hash(indexTopic, key), 0, 1<<62, 64)
		d := time.Since(t0).Nanoseconds()
		if err != nil {
			return res, err
		}
		if len(got) < want {
			return res, fmt.Errorf("bench: %s lookup of %s found %d candidates", kind, key, len(got))
		}
		_ = all.RecordValue(max(d, 1))
		_ = hs[kind].RecordValue(max(d, 1))
	}
	res.All = indexLatency(all)
	for _, k := range kinds {
		res.ByKind[k] = indexLatency(hs[k])
	}
	return res, nil
}

func indexLatency(h *hdr.Histogram) IndexLatency {
	us := func(ns int64) float64 { return float64(ns) / 1000 }
	return IndexLatency{Count: h.TotalCount(), Mean: h.Mean() / 1000, P50: us(h.ValueAtQuantile(50)),
		P99: us(h.ValueAtQuantile(99)), P999: us(h.ValueAtQuantile(99.9)), Max: us(h.Max())}
}
