package backend

import (
	"fmt"
	"strings"

	"github.com/samsamq/samsa/storage/internal/uring"
	"github.com/samsamq/samsa/storage/vfs"
)

// The uring backend: the odirect backend's segment (append ring, tail
// block rewritten in place, reads from memory or aligned file reads; see
// odirect.go) with its disk writes run through io_uring, in batches.
//
//   - Flush queues the write(s) for the pending range, each linked
//     (IOSQE_IO_LINK) to the next, and an fdatasync (IORING_OP_FSYNC with
//     IORING_FSYNC_DATASYNC) at the end of the chain, then makes one
//     io_uring_enter that submits the batch and waits for every completion.
//     Every CQE's result is checked: an error or a short write fails the
//     flush (sticky), and the link cancels the fsync after it. A spill
//     (Append with a full buffer) is the same batch without the fsync.
//   - The segment's buffers (append ring, stage, zeros) are registered
//     with IORING_REGISTER_BUFFERS and written with IORING_OP_WRITE_FIXED,
//     so the kernel does not pin pages on every write. Where registration
//     fails (RLIMIT_MEMLOCK too low), the same batch uses IORING_OP_WRITE.
//   - The file is opened O_DIRECT by default; UringOptions.Buffered writes
//     through the page cache instead (the same aligned writes).
//   - Each segment owns one ring (one descriptor, a few pages).
//   - Where the kernel refuses io_uring (ENOSYS, EPERM, EACCES: sysctl,
//     seccomp) Create and Open fail with an error wrapping
//     ErrUringUnavailable (and so errors.ErrUnsupported). Nothing falls
//     back to another write path.
//   - A file without an OS descriptor (MemFS, errorfs: File.Fd returns
//     vfs.InvalidFd) runs the same batches through an emulated ring that
//     executes each operation in order against the vfs.File with
//     io_uring's link semantics (uring_emul.go). It exists so the crash
//     and fault suites can test this backend's batching on the crashable
//     file system; it is never used for an OS file.
//
// Stats: WriteCalls counts io_uring_enter calls that submit (one per
// flush unless a signal interrupts the wait), Fsyncs the fsyncs the ring
// ran, BytesWritten the bytes the write completions report.

func init() { Register(mustDirectBackend(NewUring(UringOptions{}))) }

// ErrUringUnavailable is wrapped by the error of Create and Open where the
// kernel refuses io_uring. It wraps errors.ErrUnsupported.
var ErrUringUnavailable = uring.ErrUnavailable

// UringOptions configure the uring backend. The zero value means the
// defaults.
type UringOptions struct {
	// ODirectOptions is the memory layout, shared with odirect.
	ODirectOptions
	// Buffered opens the file without O_DIRECT: writes land in the page
	// cache and the linked fdatasync writes them back. Default false
	// (O_DIRECT). On this machine's virtual disk both measured the same
	// within its (large) noise: BenchmarkAppendFlush, 1 KiB appends, medians
	// of 6 interleaved runs, 0.49 ms (direct) vs 0.51 ms (buffered) per
	// append flushing every append, 43 vs 42 µs flushing every 16. O_DIRECT
	// stays the default: no dirty page cache to write back or to compete
	// with the consumers' reads, and the same I/O as the odirect backend.
	Buffered bool
	// Entries is the ring's submission queue size: the most operations in
	// one io_uring_enter. Default 32; 4..4096. Larger batches (zero-ahead)
	// are split, the fsync going with the last part.
	Entries int
	// NoFixedBuffers writes with IORING_OP_WRITE instead of registering
	// the buffers. Default false.
	NoFixedBuffers bool
}

// EnsureDefaults fills in zero fields.
func (o *UringOptions) EnsureDefaults() {
	o.ODirectOptions.EnsureDefaults()
	if o.Entries == 0 {
		o.Entries = 32
	}
}

// Validate reports every invalid field at once.
func (o UringOptions) Validate() error {
	var errs []string
	if err := o.ODirectOptions.Validate(); err != nil {
		errs = append(errs, strings.TrimPrefix(err.Error(), "backend: odirect options: "))
	}
	if o.Entries < 4 || o.Entries > 4096 {
		errs = append(errs, fmt.Sprintf("Entries %d outside 4..4096", o.Entries))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend: uring options: %s", strings.Join(errs, "; "))
}

// String is stable, for result files.
func (o UringOptions) String() string {
	return fmt.Sprintf("%s buffered=%t entries=%d fixed=%t", o.ODirectOptions, o.Buffered, o.Entries, !o.NoFixedBuffers)
}

// NewUring returns a uring backend with the given options (zero fields
// take their defaults). The registered "uring" uses the defaults.
func NewUring(opts UringOptions) (Backend, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return uringBackend{opts: opts, setup: uring.Setup}, nil
}

type uringBackend struct {
	opts  UringOptions
	setup func(entries uint32) (*uring.Ring, error) // a seam for tests
}

func (uringBackend) Name() string { return "uring" }

// Stages: a uring segment keeps its append ring in a stage when asked, as
// an odirect one does (odirect_stage.go); the write-behind's rounds are
// one submission each.
func (uringBackend) Stages() bool { return true }

func (b uringBackend) Create(cfg Config) (Segment, error) {
	f, err := createDirectFile("uring", cfg, !b.opts.Buffered)
	if err != nil {
		return nil, err
	}
	return newDirectSegment("uring", f, cfg, b.opts.ODirectOptions, 0, b.newIO)
}

func (b uringBackend) Open(cfg Config) (Segment, error) {
	f, err := openDirectFile("uring", cfg, !b.opts.Buffered)
	if err != nil {
		return nil, err
	}
	return newDirectSegment("uring", f, cfg, b.opts.ODirectOptions, cfg.Written, b.newIO)
}

// newIO makes the segment's ring: a kernel one for an OS file, the
// emulation for a file without a descriptor.
func (b uringBackend) newIO(s *directSegment) (directIO, error) {
	var bufs [][]byte
	ring := s.ring.buf
	if s.stagePath != "" {
		// The ring moves into the stage at the first Append: a mapping of
		// a file, which the kernel will not register (it pins only
		// anonymous memory for long); its writes are plain ones.
		ring = nil
	}
	for _, b := range [][]byte{ring, s.io.bounce, s.zeros} {
		if b != nil {
			bufs = append(bufs, b)
		}
	}
	x := &uringIO{c: &s.c, bufs: bufs}
	if s.f.Fd() == vfs.InvalidFd {
		x.ring = &emulRing{f: s.f, entries: b.opts.Entries, bufs: bufs}
		x.fixed = !b.opts.NoFixedBuffers && len(bufs) > 0
		return x, nil
	}
	r, err := b.setup(uint32(b.opts.Entries))
	if err != nil {
		return nil, fmt.Errorf("backend: uring %s: %w", s.path, err)
	}
	x.ring, x.fd = r, int(s.f.Fd())
	// A nop round trip: some seccomp filters allow io_uring_setup but not
	// io_uring_enter.
	res := []int32{0}
	if _, err := r.SubmitAndWait([]uring.Op{{Code: uring.OpNop}}, res); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("backend: uring %s: %w", s.path, err)
	}
	if !b.opts.NoFixedBuffers && len(bufs) > 0 {
		// Registration can fail for want of locked memory; plain writes do
		// the same job, pinning pages per write.
		x.fixed = r.RegisterBuffers(bufs) == nil
	}
	return x, nil
}
