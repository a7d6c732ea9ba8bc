package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

func benchMessage(body []byte, queue int32) *storage.Message {
	return &storage.Message{Topic: benchTopic, QueueID: queue, Body: body, Properties: benchProps,
		TagsCode: record.TagsCode(benchTags), BornTimestamp: time.Now().UnixMilli(),
		BornHost: benchBornHost, StoreHost: benchStoreHost}
}

// storeOptions maps the bench options to the engine's. Retention is off:
// it would delete what the run is measuring.
func (o StorageOptions) storeOptions(dir string) (storage.Options, error) {
	pol, err := storage.ParseFlushPolicy(o.Flush)
	if err != nil {
		return storage.Options{}, err
	}
	so := storage.Options{
		Dir: dir, Backend: o.Backend, SegmentSize: o.SegmentSize, Preallocate: o.Preallocate,
		Flush: storage.FlushOptions{Policy: pol, MaxBatchBytes: o.MaxBatchBytes, MinInterval: o.MinInterval,
			MaxGather: o.MaxGather, MaxPending: o.MaxPending, Interval: o.Interval, DirtyPages: o.DirtyPages},
		Retention:   storage.RetentionOptions{MaxAge: -1, DiskRatio: -1},
		AckBuffered: o.AckBuffered,
		NoStage:     o.NoStage,
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	so.EnsureDefaults()
	return so, so.Validate()
}

// unavailable marks errors that mean "this backend cannot run here".
func unavailable(backendName string, err error) error {
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, vfs.ErrDirectUnsupported) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, backendName, err)
	}
	return err
}

// RunStorage opens a fresh store under opts.Dir, drives it with
// opts.Writers closed-loop appenders for Warmup+Duration, and returns
// what it measured over Duration. The store is closed and its directory
// removed before it returns.
func RunStorage(ctx context.Context, opts StorageOptions) (*StorageResult, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("bench: storage options: %w", err)
	}
	if _, err := backend.Get(opts.Backend); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.Dir, "store-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // scratch: nothing in it is kept
	so, err := opts.storeOptions(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: storage options: %w", err)
	}
	st, err := storage.Open(so)
	if err != nil {
		return nil, unavailable(opts.Backend, err)
	}
	res, runErr := driveStore(ctx, st, opts)
	if err := st.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("bench: close store: %w", err)
	}
	if runErr != nil {
		return nil, runErr
	}
	res.StoreConfig = so.String()
	res.Durability, res.DurabilityNote = so.Durability().String(), so.DurabilityNote()
	return res, nil
}

// driveStore runs the writers against an open store.
func driveStore(ctx context.Context, st *storage.Store, opts StorageOptions) (*StorageResult, error) {
	body := make([]byte, opts.Size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	// One append before the clock starts: it creates the first segment
	// (where an unsupported backend fails) and gives the record size.
	ar, err := st.Append(ctx, benchMessage(body, 0))
	if err != nil {
		return nil, unavailable(opts.Backend, fmt.Errorf("bench: first append: %w", err))
	}
	res := &StorageResult{Kind: "storage", Config: opts.String(), Options: opts, RecordBytes: int(ar.Size)}

	var (
		wg       sync.WaitGroup
		errCount atomic.Int64
		firstErr atomic.Pointer[error]
		hists    = make([]*hdr.Histogram, opts.Writers)
		counts   = make([]int64, opts.Writers)
		start    = time.Now()
		measure  = start.Add(opts.Warmup)
		deadline = measure.Add(opts.Duration)
	)
	res.Start = measure.UTC()
	for w := range opts.Writers {
		hists[w] = newHist()
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := benchMessage(body, int32(w%opts.Queues))
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				m.BornTimestamp = t0.UnixMilli()
				if _, err := st.Append(ctx, m); err != nil {
					errCount.Add(1)
					keep := err // &err here would move every append's err to the heap
					firstErr.CompareAndSwap(nil, &keep)
					if st.Err() != nil || errors.Is(err, storage.ErrClosed) {
						return // broken for good: every later append fails the same
					}
					continue
				}
				if !t0.Before(measure) {
					recordUs(hists[w], time.Since(t0))
					counts[w]++
				}
			}
		}()
	}
	var m0, m1 storage.Metrics
	var io0, io1 ProcIO
	var ioOK bool
	dev := watchDevice(opts.Dir)
	if sleepUntil(ctx, measure) {
		m0 = st.Metrics()
		io0, ioOK = readProcIO("/proc/self/io")
		dev.start()
		if sleepUntil(ctx, deadline) {
			m1 = st.Metrics()
			io1, _ = readProcIO("/proc/self/io")
			res.Device, res.DeviceNote = dev.stop()
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, c := range counts {
		res.Appends += c
	}
	res.Errors = errCount.Load()
	if p := firstErr.Load(); p != nil {
		res.FirstError = (*p).Error()
		if res.Appends == 0 {
			return nil, fmt.Errorf("bench: every append failed: %w", *p)
		}
	}
	// A staging uring segment syncs with a plain fdatasync, outside its
	// ring (storage/backend/odirect_stage.go).
	fillStoreCounters(res, m0, m1, ringFsync[opts.Backend] && !st.Options().Stages())
	if ioOK {
		d := io1.sub(io0)
		res.ProcIO = &d
	}
	res.MeasuredSeconds = opts.Duration.Seconds()
	res.MsgsPerSec = float64(res.Appends) / res.MeasuredSeconds
	res.MBPerSec = res.MsgsPerSec * float64(opts.Size) / 1e6
	res.LogMBPerSec = res.MsgsPerSec * float64(res.RecordBytes) / 1e6
	res.LatencyUs = summarizeHist(mergeHists(hists))
	return res, nil
}

// ringFsync names the backends whose fsyncs ride in the same submission
// as the writes (an io_uring linked IORING_OP_FSYNC) when they do not
// stage: Stats counts them as fsyncs, but they cost no syscall of their
// own.
var ringFsync = map[string]bool{"uring": true}

// fillStoreCounters sets the engine counters from two Metrics snapshots.
func fillStoreCounters(res *StorageResult, m0, m1 storage.Metrics, fsyncInRing bool) {
	appends := m1.Appends - m0.Appends
	res.Fsyncs = m1.Fsyncs - m0.Fsyncs
	res.FlushBatches = m1.FlushBatches - m0.FlushBatches
	res.WriteCalls = m1.Backend.WriteCalls - m0.Backend.WriteCalls
	res.BytesWritten = m1.Backend.BytesWritten - m0.Backend.BytesWritten
	res.Gathers = m1.Gathers - m0.Gathers
	res.GatherMisses = m1.GatherMisses - m0.GatherMisses
	res.OwnRounds = m1.OwnRounds - m0.OwnRounds
	if res.Gathers > 0 {
		res.GatherAvgUs = float64((m1.GatherTime - m0.GatherTime).Microseconds()) / float64(res.Gathers)
	}
	if res.Fsyncs > 0 {
		res.AvgBatch = float64(appends) / float64(res.Fsyncs)
	}
	if appends > 0 {
		calls := res.WriteCalls + res.Fsyncs
		if fsyncInRing {
			calls = res.WriteCalls
		}
		res.SyscallsPer1000 = float64(calls) * 1000 / float64(appends)
	}
	res.FlushP99Us = float64(m1.FlushP99.Microseconds())
}

// sleepUntil waits for t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
