package storage

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestOptionsDefaults(t *testing.T) {
	o := Options{Dir: "/d"}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	f := o.Flush
	switch {
	case o.FS != vfs.Default, o.Backend != "pwrite", o.SegmentSize != 1<<30, o.MaxMessageSize != 4<<20,
		o.ConsumeQueueEntries != 300_000, o.CheckpointInterval != time.Second, o.Logger != slog.Default(), o.Clock == nil,
		f.Policy != FlushAsync, f.MaxPending != 16384, f.Timeout != 5*time.Second, f.Interval != 500*time.Millisecond,
		f.DirtyPages != 4, f.FullInterval != 10*time.Second, f.MaxBatchBytes != 0, f.MinInterval != 0,
		o.Retention.MaxAge != 72*time.Hour, o.Retention.DiskRatio != 0.75, o.Retention.CheckInterval != 10*time.Second:
		t.Fatalf("defaults: %s", o)
	}
	// Explicit values stay.
	p := Options{Dir: "/d", SegmentSize: 8192, Flush: FlushOptions{Policy: FlushSync, MaxPending: 3}}
	p.EnsureDefaults()
	if p.SegmentSize != 8192 || p.Flush.Policy != FlushSync || p.Flush.MaxPending != 3 {
		t.Fatalf("EnsureDefaults overwrote: %s", p)
	}
}

func TestOptionsValidateAllAtOnce(t *testing.T) {
	o := Options{
		Backend:             "nope",
		SegmentSize:         1000,
		MaxMessageSize:      -1,
		ConsumeQueueEntries: -1,
		CheckpointInterval:  -1,
		Flush: FlushOptions{Policy: 7, MaxBatchBytes: -1, MinInterval: -1, MaxPending: -1,
			Timeout: -1, Interval: -1, FullInterval: -1},
		Retention: RetentionOptions{DiskRatio: 1.5, CheckInterval: -1},
	}
	err := o.Validate()
	if err == nil {
		t.Fatal("invalid options validated")
	}
	for _, want := range []string{"Dir", "FS", "Backend", "SegmentSize", "MaxMessageSize", "ConsumeQueueEntries",
		"CheckpointInterval", "Logger", "Clock", "Flush.Policy", "Flush.MaxBatchBytes", "Flush.MinInterval",
		"Flush.MaxPending", "Flush.Timeout", "Flush.Interval", "Flush.FullInterval", "Retention.DiskRatio",
		"Retention.CheckInterval"} {
		if s := err.Error(); !strings.Contains(s, "Options."+want+" ") && !strings.Contains(s, "Options."+want+":") {
			t.Errorf("no complaint about %s in:\n%v", want, err)
		}
	}
	if _, err := Open(Options{Dir: "/x", FS: vfs.NewMem(), SegmentSize: 5000}); err == nil || !strings.Contains(err.Error(), "SegmentSize") {
		t.Fatalf("Open with a bad SegmentSize: %v", err)
	}
}

func TestOptionsStringStable(t *testing.T) {
	o := Options{Dir: "/data", FS: vfs.NewMem(), Flush: FlushOptions{Policy: FlushSync, MinInterval: time.Millisecond}}
	o.EnsureDefaults()
	want := `storage.Options{Dir: "/data", FS: *vfs.MemFS, Backend: pwrite, SegmentSize: 1073741824, Preallocate: false, ` +
		`MaxMessageSize: 4194304, Flush: {Policy: sync, MaxBatchBytes: 0, MinInterval: 1ms, MaxGather: 1ms, MaxPending: 16384, ` +
		`Timeout: 5s, NoOwnRound: false, Interval: 500ms, DirtyPages: 4, FullInterval: 10s}, AckBuffered: false, NoStage: false, ConsumeQueueEntries: 300000, ConsumeQueueMaxOpenFiles: 1024, ReadCacheSize: 67108864, DirectColdReads: false, ` +
		`CheckpointInterval: 1s, Retention: {MaxAge: 72h0m0s, DiskRatio: 0.75, CheckInterval: 10s}, Scrub: {BytesPerSecond: 8388608, Interval: 24h0m0s}, VerifyOnOpen: on, ` +
		`MessageIndex: {Disabled: false, MaxHashSlots: 5000000, MaxEntries: 20000000}}`
	if got := o.String(); got != want {
		t.Fatalf("String:\n got %s\nwant %s", got, want)
	}
	if again := o.String(); again != o.String() {
		t.Fatal("String not stable")
	}
}

func TestFlushPolicyNames(t *testing.T) {
	for _, p := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
		q, err := ParseFlushPolicy(p.String())
		if err != nil || q != p {
			t.Fatalf("%v: %v %v", p, q, err)
		}
	}
	if _, err := ParseFlushPolicy("fast"); err == nil {
		t.Fatal("parsed nonsense")
	}
	if FlushPolicy(9).String() != "FlushPolicy(9)" {
		t.Fatal(FlushPolicy(9).String())
	}
}
