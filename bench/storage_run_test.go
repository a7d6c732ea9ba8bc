package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/backend"
)

// TestRunEndToEnd runs a two-cell experiment for real: the raw disk, the
// fsync probe and the storage engine on t.TempDir().
func TestRunEndToEnd(t *testing.T) {
	e, err := ParseExperiment([]byte(`{
	  "name": "tiny", "kind": "storage", "repeats": 1, "duration": "200ms", "warmup": "50ms",
	  "matrix": {"backends": ["pwrite"], "flush": ["sync", "async"], "sizes": [1024], "writers": [2]},
	  "options": {"segment_size": 1048576, "interval": "50ms"},
	  "disk": {"run": true, "file_size": 67108864, "probe": "100ms"}
	}`))
	require.NoError(t, err)
	dir := t.TempDir()
	res, err := Run(context.Background(), e, RunOptions{Dir: dir, Command: "test"})
	require.NoError(t, err)
	require.Len(t, res.Cells, 2)
	for _, c := range res.Cells {
		require.Equal(t, StatusOK, c.Status, c.Reason)
		require.Len(t, c.Runs, 1)
		r := c.Runs[0]
		require.Positive(t, r.Appends, c.Label)
		require.Zero(t, r.Errors, r.FirstError)
		require.Equal(t, RecordSize(1024), r.RecordBytes, "the disk reference writes what the store writes")
		require.Positive(t, r.LatencyUs.P50)
		require.Contains(t, r.StoreConfig, "Backend: pwrite")
		require.Contains(t, r.StoreConfig, "SegmentSize: 1048576")
		require.NotNil(t, c.Ratios.MB, c.Label)
		require.Positive(t, c.Ratios.MB.Median)
	}
	s := res.Cell("pwrite/sync/1KiB/w2")
	require.NotNil(t, s)
	require.Positive(t, s.Runs[0].Fsyncs, "sync appends wait for fsyncs")
	require.GreaterOrEqual(t, s.Runs[0].AvgBatch, 0.9, "two writers share fsyncs at best, never need more than one each")
	require.NotNil(t, s.Ratios.P99VsFsync)
	require.Equal(t, fmt.Sprintf("block=%d/fsync=every", RecordSize(1024)), s.DiskRef)
	require.Len(t, res.DiskRefs, 2)
	require.NotNil(t, res.Probe)
	require.Len(t, res.Probe.Runs, 1)
	require.NotEmpty(t, res.Machine.Kernel)

	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "every run cleans up after itself")
}

func TestRunStorageUnavailableBackend(t *testing.T) {
	_, err := RunStorage(context.Background(), StorageOptions{Dir: t.TempDir(), Backend: "nosuch", Duration: 10 * time.Millisecond})
	require.ErrorIs(t, err, ErrUnavailable)
}

func TestStorageOptionsValidate(t *testing.T) {
	o := StorageOptions{Flush: "maybe", Size: -1, Writers: -1, Duration: -1, Queues: -1, SegmentSize: -1}
	err := o.Validate()
	for _, want := range []string{"dir is required", `flush "maybe"`, "size -1", "writers -1", "duration", "queues -1", "negative"} {
		require.ErrorContains(t, err, want)
	}
	o = StorageOptions{Dir: "x"}
	o.EnsureDefaults()
	require.NoError(t, o.Validate())
	require.Equal(t, "backend=pwrite flush=async size=1024 writers=1 queues=8 duration=10s warmup=1s segment_size=0 preallocate=false max_batch_bytes=0 min_interval=0s max_gather=0s max_pending=0 interval=0s dirty_pages=0 ack_buffered=false", o.String())
}

func TestDiskOptionsValidate(t *testing.T) {
	o := DiskOptions{Block: -1, Fsync: "sometimes", Writers: -1, Duration: -1}
	err := o.Validate()
	for _, want := range []string{"dir is required", "block -1", `fsync "sometimes"`, "writers -1", "duration"} {
		require.ErrorContains(t, err, want)
	}
}

func TestRunDiskEveryPolicy(t *testing.T) {
	dir := t.TempDir()
	for _, fs := range []FsyncPolicy{FsyncEvery, FsyncInterval, FsyncNone} {
		r, err := RunDisk(context.Background(), DiskOptions{Dir: dir, Block: 4096, Duration: 150 * time.Millisecond,
			Fsync: fs, Interval: 20 * time.Millisecond, Writers: 2, FileSize: 8192, ProbeDuration: 50 * time.Millisecond})
		require.NoError(t, err, fs)
		require.Positive(t, r.Writes)
		require.Equal(t, r.Writes*4096, r.Bytes)
		// A block per writer to start with: any third write grows it (how
		// many writes a busy machine manages in the window varies).
		if r.Writes > 2 {
			require.Greater(t, r.Bytes, int64(8192), "the file grows a step at a time, never wraps")
		}
		switch fs {
		case FsyncEvery:
			require.GreaterOrEqual(t, r.Fsyncs, r.Writes, "one per write (warm-up ones too)")
		case FsyncInterval:
			require.Positive(t, r.Fsyncs)
		case FsyncNone:
			require.Zero(t, r.Fsyncs)
		}
		require.NotNil(t, r.FsyncProbeUs)
		require.GreaterOrEqual(t, r.FsyncProbeUs.Count, int64(10))
	}
	left, _ := os.ReadDir(dir)
	require.Empty(t, left)
}

func TestFillStoreCountersCountsRingFsyncsOnce(t *testing.T) {
	m0 := storage.Metrics{Appends: 100, Fsyncs: 10}
	m1 := storage.Metrics{Appends: 1100, Fsyncs: 60, FlushBatches: 50,
		Backend: backend.Stats{WriteCalls: 50, BytesWritten: 1 << 20, Fsyncs: 60}}
	m0.Backend.Fsyncs = 10
	var r StorageResult
	fillStoreCounters(&r, m0, m1, false)
	require.Equal(t, int64(50), r.Fsyncs)
	require.Equal(t, 20.0, r.AvgBatch)
	require.Equal(t, 100.0, r.SyscallsPer1000) // 50 writes + 50 fsyncs per 1000 appends
	require.Equal(t, int64(1<<20), r.BytesWritten)
	fillStoreCounters(&r, m0, m1, true)
	require.Equal(t, 50.0, r.SyscallsPer1000, "a linked fsync rides in its submit")
}
