package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/internal/resultfile"
)

// FsyncPolicy is how the raw-disk reference makes its writes durable.
type FsyncPolicy string

const (
	FsyncEvery    FsyncPolicy = "every"    // fdatasync after every write, by the writer
	FsyncInterval FsyncPolicy = "interval" // one goroutine fdatasyncs every Interval
	FsyncNone     FsyncPolicy = "none"     // never: the OS writes back
)

// DiskOptions configure RunDisk.
type DiskOptions struct {
	// Dir holds the test file (created, removed afterwards). Required.
	Dir string
	// Block is the bytes of each pwrite; default 4096.
	Block int
	// Duration is the measured time; default 10s.
	Duration time.Duration
	// Warmup runs before measuring, unrecorded; default 0.
	Warmup time.Duration
	// Fsync is the durability policy; default FsyncEvery.
	Fsync FsyncPolicy
	// Interval is FsyncInterval's period; default 500ms (the store's async
	// flush interval).
	Interval time.Duration
	// Writers is the number of goroutines writing; each claims the next
	// block of the file, so the file is written sequentially; default 1.
	Writers int
	// FileSize is the preallocation step: the file is fallocated this
	// much at a time, ahead of the writes, the way the store creates its
	// segments. Writes never wrap round (rewriting pages still in the
	// page cache would measure memory, not the disk). Default 1 GiB.
	FileSize int64
	// ProbeDuration is how long ProbeFsync runs after the main run (a lone
	// fdatasync after each one-block write); default 1s, < 0: no probe.
	ProbeDuration time.Duration
}

// EnsureDefaults fills zero fields with their defaults.
func (o *DiskOptions) EnsureDefaults() {
	if o.Block == 0 {
		o.Block = 4096
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Fsync == "" {
		o.Fsync = FsyncEvery
	}
	if o.Interval == 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.Writers == 0 {
		o.Writers = 1
	}
	if o.FileSize == 0 {
		o.FileSize = 1 << 30
	}
	if o.ProbeDuration == 0 {
		o.ProbeDuration = time.Second
	}
}

// Validate reports every invalid field at once.
func (o *DiskOptions) Validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("dir is required"))
	}
	if o.Block <= 0 {
		errs = append(errs, fmt.Errorf("block %d must be > 0", o.Block))
	}
	if o.Duration <= 0 || o.Warmup < 0 {
		errs = append(errs, fmt.Errorf("duration %s must be > 0 and warmup %s >= 0", o.Duration, o.Warmup))
	}
	switch o.Fsync {
	case FsyncEvery, FsyncInterval, FsyncNone:
	default:
		errs = append(errs, fmt.Errorf("fsync %q: want every, interval or none", o.Fsync))
	}
	if o.Fsync == FsyncInterval && o.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval %s must be > 0", o.Interval))
	}
	if o.Writers <= 0 {
		errs = append(errs, fmt.Errorf("writers %d must be > 0", o.Writers))
	}
	if o.FileSize < int64(o.Block)*int64(max(o.Writers, 1)) {
		errs = append(errs, fmt.Errorf("file size (preallocation step) %d must hold a block per writer", o.FileSize))
	}
	return errors.Join(errs...)
}

// String lists every option on one line, stable, for result files.
func (o DiskOptions) String() string {
	s := fmt.Sprintf("block=%d fsync=%s writers=%d duration=%s warmup=%s file_size=%d probe=%s",
		o.Block, o.Fsync, o.Writers, o.Duration, o.Warmup, o.FileSize, o.ProbeDuration)
	if o.Fsync == FsyncInterval {
		s += fmt.Sprintf(" interval=%s", o.Interval)
	}
	return s
}

// DiskResult is one raw-disk run.
type DiskResult struct {
	Kind            string      `json:"kind"` // "disk"
	Config          string      `json:"config"`
	Options         DiskOptions `json:"options"`
	Start           time.Time   `json:"start"`
	MeasuredSeconds float64     `json:"measured_seconds"`
	Writes          int64       `json:"writes"`
	Bytes           int64       `json:"bytes"`
	MsgsPerSec      float64     `json:"msgs_per_sec"` // writes per second
	MBPerSec        float64     `json:"mb_per_sec"`   // 10^6 bytes per second
	// LatencyUs is per write, including its fdatasync under FsyncEvery.
	LatencyUs Latency `json:"latency_us"`
	Fsyncs    int64   `json:"fsyncs"`
	// FsyncProbeUs is ProbeFsync's: a lone fdatasync after one block.
	FsyncProbeUs *Latency            `json:"fsync_probe_us,omitempty"`
	Machine      *resultfile.Machine `json:"machine,omitempty"`
}

// diskFile is a preallocated scratch file written by block offsets.
type diskFile struct {
	f    *os.File
	fd   int
	size int64 // the first preallocation, a multiple of the block
	// allocated is how far the file is preallocated; grow extends it.
	allocated atomic.Int64
	growMu    sync.Mutex
}

// grow makes sure the file is preallocated up to end, a step (size) at a
// time. Writers call it when a write would pass the preallocated end.
func (d *diskFile) grow(end int64) error {
	d.growMu.Lock()
	defer d.growMu.Unlock()
	for a := d.allocated.Load(); a < end; a = d.allocated.Load() {
		if err := unix.Fallocate(d.fd, 0, a, d.size); err != nil {
			return fmt.Errorf("bench: fallocate %s at %d: %w", d.f.Name(), a, err)
		}
		d.allocated.Store(a + d.size)
	}
	return nil
}

func openDiskFile(dir, name string, block int, size int64) (*diskFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	size -= size % int64(block)
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		_ = f.Close() // a scratch file, removed next
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("bench: fallocate %s: %w", f.Name(), err)
	}
	// The preallocation itself must not be in the first measured fsync.
	if err := unix.Fsync(int(f.Fd())); err != nil {
		_ = f.Close() // a scratch file, removed next
		_ = os.Remove(f.Name())
		return nil, err
	}
	d := &diskFile{f: f, fd: int(f.Fd()), size: size}
	d.allocated.Store(size)
	return d, nil
}

func (d *diskFile) close() error {
	err := d.f.Close()
	if rerr := os.Remove(d.f.Name()); err == nil {
		err = rerr
	}
	return err
}

// pwriteFull writes all of p at off.
func pwriteFull(fd int, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := unix.Pwrite(fd, p, off)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return err
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// RunDisk measures plain sequential pwrite of opts.Block bytes into a
// preallocated file (grown a FileSize step at a time, never rewritten)
// under the fsync policy, then (unless disabled) ProbeFsync.
func RunDisk(ctx context.Context, opts DiskOptions) (*DiskResult, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("bench: disk options: %w", err)
	}
	df, err := openDiskFile(opts.Dir, "disk-bench.dat", opts.Block, opts.FileSize)
	if err != nil {
		return nil, err
	}
	defer func() { _ = df.close() }() // a scratch file: no byte of it is kept

	res := &DiskResult{Kind: "disk", Config: opts.String(), Options: opts, Start: time.Now().UTC()}
	var (
		next     atomic.Int64 // next block index to write
		fsyncs   atomic.Int64
		failure  atomic.Pointer[error]
		wg       sync.WaitGroup
		hists    = make([]*hdr.Histogram, opts.Writers)
		counts   = make([]int64, opts.Writers)
		start    = time.Now()
		measure  = start.Add(opts.Warmup)
		deadline = measure.Add(opts.Duration)
	)
	fail := func(err error) { failure.CompareAndSwap(nil, &err) }
	stop := make(chan struct{})
	if opts.Fsync == FsyncInterval {
		wg.Add(1)
		go func() { // the interval flusher: woken by its ticker, stopped by stop
			defer wg.Done()
			t := time.NewTicker(opts.Interval)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if err := unix.Fdatasync(df.fd); err != nil {
						fail(err)
						return
					}
					fsyncs.Add(1)
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w := 0; w < opts.Writers; w++ {
		hists[w] = newHist()
		writers.Add(1)
		go func() {
			defer writers.Done()
			buf := make([]byte, opts.Block)
			for i := range buf {
				buf[i] = byte(i*7 + w)
			}
			for ctx.Err() == nil && failure.Load() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				off := (next.Add(1) - 1) * int64(opts.Block)
				if end := off + int64(opts.Block); end > df.allocated.Load() {
					if err := df.grow(end); err != nil {
						fail(err)
						return
					}
				}
				if err := pwriteFull(df.fd, buf, off); err != nil {
					fail(err)
					return
				}
				if opts.Fsync == FsyncEvery {
					if err := unix.Fdatasync(df.fd); err != nil {
						fail(err)
						return
					}
					fsyncs.Add(1)
				}
				if !t0.Before(measure) {
					recordUs(hists[w], time.Since(t0))
					counts[w]++
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	if p := failure.Load(); p != nil {
		return nil, fmt.Errorf("bench: disk write: %w", *p)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, c := range counts {
		res.Writes += c
	}
	res.Bytes = res.Writes * int64(opts.Block)
	res.MeasuredSeconds = opts.Duration.Seconds()
	res.MsgsPerSec = float64(res.Writes) / res.MeasuredSeconds
	res.MBPerSec = float64(res.Bytes) / 1e6 / res.MeasuredSeconds
	res.LatencyUs = summarizeHist(mergeHists(hists))
	res.Fsyncs = fsyncs.Load()
	if opts.ProbeDuration > 0 {
		lat, err := ProbeFsync(ctx, opts.Dir, opts.Block, opts.ProbeDuration)
		if err != nil {
			return nil, err
		}
		res.FsyncProbeUs = &lat
	}
	return res, nil
}

// ProbeFsync measures single-fsync latency: one writer writes one block
// into a fresh preallocated file, then times a lone fdatasync, until d has
// passed (at least 10 samples). Its p99 is what a sync append's p99 is
// held against: a group commit cannot beat one fsync.
func ProbeFsync(ctx context.Context, dir string, block int, d time.Duration) (Latency, error) {
	df, err := openDiskFile(dir, "fsync-probe.dat", block, 256<<20)
	if err != nil {
		return Latency{}, err
	}
	defer func() { _ = df.close() }() // a scratch file: no byte of it is kept
	buf := make([]byte, block)
	h := newHist()
	end := time.Now().Add(d)
	for i := int64(0); ctx.Err() == nil && (time.Now().Before(end) || h.TotalCount() < 10); i++ {
		if err := pwriteFull(df.fd, buf, i%(df.size/int64(block))*int64(block)); err != nil {
			return Latency{}, fmt.Errorf("bench: fsync probe: %w", err)
		}
		t0 := time.Now()
		if err := unix.Fdatasync(df.fd); err != nil {
			return Latency{}, fmt.Errorf("bench: fsync probe: %w", err)
		}
		recordUs(h, time.Since(t0))
	}
	return summarizeHist(h), ctx.Err()
}
