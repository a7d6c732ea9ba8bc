package bench

import (
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
)

// DeviceIO is what the block device holding a run's data dir did over the
// measured window (/sys/block/<dev>/stat, or the partition's): write
// requests completed and bytes written. It is the whole device's: other
// processes' writes count, and the page cache's write-back of this run's
// bytes counts when it happens inside the window (under async flush the
// store's fdatasync every Flush.Interval forces it in). Beside the
// engine's syscalls it shows what the disk was asked to do: few large
// writes (O_DIRECT from a ring, write-back of whole extents) or many
// small ones (a write+fsync per group), and bytes beyond the log's (a
// stage file's pages written back too, journal, metadata).
type DeviceIO struct {
	Device     string `json:"device"`
	WriteIOs   int64  `json:"write_ios"`
	WriteBytes int64  `json:"write_bytes"`
	// WritesPerSec is WriteIOs over the window; AvgWriteBytes
	// WriteBytes / WriteIOs (0 without writes).
	WritesPerSec  float64 `json:"writes_per_sec"`
	AvgWriteBytes float64 `json:"avg_write_bytes"`
}

// devWatch reads a device's counters at the start and the end of a window.
type devWatch struct {
	src  resultfile.DevStatSource
	note string // why there are no counters
	at0  resultfile.DevStat
	t0   time.Time
	ok   bool
}

// watchDevice resolves dir's device; a watch that cannot resolve it keeps
// the reason and reports nothing.
func watchDevice(dir string) *devWatch {
	src, err := resultfile.FindDevStat(dir)
	if err != nil {
		return &devWatch{note: "n/a: " + err.Error()}
	}
	return &devWatch{src: src}
}

// start reads the counters at the window's start.
func (w *devWatch) start() {
	if w.note != "" {
		return
	}
	st, err := w.src.Read()
	if err != nil {
		w.note = "n/a: " + err.Error()
		return
	}
	w.at0, w.t0, w.ok = st, time.Now(), true
}

// stop reads them at the window's end and returns the deltas, or nil and
// the reason.
func (w *devWatch) stop() (*DeviceIO, string) {
	if !w.ok {
		return nil, w.note
	}
	st, err := w.src.Read()
	if err != nil {
		return nil, "n/a: " + err.Error()
	}
	secs := time.Since(w.t0).Seconds()
	d := st.Sub(w.at0)
	io := &DeviceIO{Device: w.src.Device, WriteIOs: d.WriteIOs, WriteBytes: d.WriteSectors * 512}
	if secs > 0 {
		io.WritesPerSec = float64(io.WriteIOs) / secs
	}
	if io.WriteIOs > 0 {
		io.AvgWriteBytes = float64(io.WriteBytes) / float64(io.WriteIOs)
	}
	return io, ""
}
