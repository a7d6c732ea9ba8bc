package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Read methods: how RunDiskRead keeps the page cache out of the measured
// read.
const (
	ReadAuto    = "auto"    // O_DIRECT, or fadvise where O_DIRECT is refused
	ReadODirect = "odirect" // O_DIRECT reads of aligned blocks
	ReadFadvise = "fadvise" // buffered reads after fdatasync + fadvise(DONTNEED)
)

// DiskReadOptions configure RunDiskRead.
type DiskReadOptions struct {
	// Dir holds the test file (created, removed afterwards). Required.
	Dir string
	// Block is the bytes of each read; default 1 MiB (a multiple of 4096
	// for O_DIRECT).
	Block int
	// Size is the file written and then read once, sequentially; default
	// 1 GiB. Larger than the device's cache makes the figure the media's.
	Size int64
	// Method is ReadAuto (default), ReadODirect or ReadFadvise.
	Method string
}

// EnsureDefaults fills zero fields with their defaults.
func (o *DiskReadOptions) EnsureDefaults() {
	if o.Block == 0 {
		o.Block = 1 << 20
	}
	if o.Size == 0 {
		o.Size = 1 << 30
	}
	if o.Method == "" {
		o.Method = ReadAuto
	}
}

// Validate reports every invalid field at once.
func (o *DiskReadOptions) Validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("dir is required"))
	}
	if o.Block <= 0 || o.Block%4096 != 0 {
		errs = append(errs, fmt.Errorf("block %d must be a positive multiple of 4096", o.Block))
	}
	if o.Size < int64(o.Block) {
		errs = append(errs, fmt.Errorf("size %d must hold at least one block of %d", o.Size, o.Block))
	}
	switch o.Method {
	case ReadAuto, ReadODirect, ReadFadvise:
	default:
		errs = append(errs, fmt.Errorf("method %q: want auto, odirect or fadvise", o.Method))
	}
	return errors.Join(errs...)
}

// String lists every option on one line, stable, for result files.
func (o DiskReadOptions) String() string {
	return fmt.Sprintf("read block=%d size=%d method=%s", o.Block, o.Size, o.Method)
}

// DiskReadResult is one raw sequential read.
type DiskReadResult struct {
	Kind    string          `json:"kind"` // "disk-read"
	Config  string          `json:"config"`
	Options DiskReadOptions `json:"options"`
	Start   time.Time       `json:"start"`
	// Method is the method that ran; MethodNote why, when auto fell back.
	Method     string `json:"method"`
	MethodNote string `json:"method_note,omitempty"`
	// ResidentBefore is how much of the file was in the page cache when
	// the read began (fadvise: should be ~0; O_DIRECT bypasses it).
	ResidentBefore  int64               `json:"resident_before_bytes"`
	Bytes           int64               `json:"bytes"`
	MeasuredSeconds float64             `json:"measured_seconds"`
	MBPerSec        float64             `json:"mb_per_sec"` // 10^6 bytes per second
	LatencyUs       Latency             `json:"latency_us"` // per read of Block
	Machine         *resultfile.Machine `json:"machine,omitempty"`
}

// RunDiskRead writes a Size-byte file (fdatasynced), then times one
// sequential pass of Block-sized reads over it with the page cache kept
// out: O_DIRECT, or fadvise(DONTNEED) first. It is the raw sequential read
// rate a cold-read backlog drain is held against.
func RunDiskRead(ctx context.Context, opts DiskReadOptions) (*DiskReadResult, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("bench: disk read options: %w", err)
	}
	size := opts.Size - opts.Size%int64(opts.Block)
	df, err := openDiskFile(opts.Dir, "disk-read-bench.dat", opts.Block, size)
	if err != nil {
		return nil, err
	}
	defer func() { _ = df.close() }() // a scratch file: no byte of it is kept
	buf := alignedBlock(opts.Block)
	for i := range buf {
		buf[i] = byte(i*13 + 1)
	}
	for off := int64(0); off < size; off += int64(opts.Block) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := pwriteFull(df.fd, buf, off); err != nil {
			return nil, fmt.Errorf("bench: disk read: write the file: %w", err)
		}
	}
	path := df.f.Name()
	if err := DropFileCache(path); err != nil {
		return nil, err
	}
	res := &DiskReadResult{Kind: "disk-read", Config: opts.String(), Options: opts, Start: time.Now().UTC(), Method: opts.Method}
	fd := -1
	if opts.Method != ReadFadvise {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if err != nil && opts.Method == ReadODirect {
			return nil, fmt.Errorf("bench: disk read: open %s O_DIRECT: %w", path, err)
		}
		if err != nil {
			res.Method, res.MethodNote = ReadFadvise, fmt.Sprintf("O_DIRECT refused here (%v): fadvise(DONTNEED), then buffered reads", err)
		} else {
			res.Method = ReadODirect
		}
	}
	if fd < 0 {
		if fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("bench: disk read: open %s: %w", path, err)
		}
		// Read-ahead as a streaming reader gets it; the drop above made
		// the file cold.
		_ = unix.Fadvise(fd, 0, 0, unix.FADV_SEQUENTIAL)
	}
	defer func() { _ = unix.Close(fd) }() // opened read-only
	if res.ResidentBefore, _, err = Resident(path); err != nil {
		return nil, err
	}
	h := newHist()
	start := time.Now()
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		n, err := unix.Pread(fd, buf, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bench: disk read at %d: %w", off, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("bench: disk read: early end of file at %d of %d", off, size)
		}
		recordUs(h, time.Since(t0))
		off += int64(n)
		res.Bytes += int64(n)
	}
	el := time.Since(start)
	res.MeasuredSeconds = el.Seconds()
	res.MBPerSec = float64(res.Bytes) / 1e6 / el.Seconds()
	res.LatencyUs = summarizeHist(h)
	return res, nil
}

// alignedBlock is a block-sized buffer aligned to 4096 bytes (O_DIRECT).
func alignedBlock(n int) []byte {
	b := make([]byte, n+4096)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & 4095); r != 0 {
		off = 4096 - r
	}
	return b[off : off+n]
}

// WriteJSON writes the run as indented JSON (the --json flag).
func (r *DiskReadResult) WriteJSON(path string) error { return writeJSON(path, r) }
