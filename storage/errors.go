package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/samsamq/samsa/storage/vfs"
)

// Errors of the store; match them with errors.Is. Most come wrapped with
// the underlying error and the offsets involved.
var (
	// ErrBroken: an fsync (or another write the store cannot take back)
	// failed; the store acknowledges nothing as durable any more. Every
	// waiting and later Append returns an error wrapping ErrBroken and
	// the first underlying error. Reopen to recover.
	ErrBroken = errors.New("storage: store is broken")
	// ErrFlushTimeout: a sync Append's record was written but not known
	// durable within Flush.Timeout. It may yet become durable.
	ErrFlushTimeout = errors.New("storage: timed out waiting for durability")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("storage: closed")
	// ErrMessageTooLarge: the body exceeds MaxMessageSize, or the record
	// (or batch) does not fit one segment.
	ErrMessageTooLarge = errors.New("storage: message too large")
	// ErrDiskFull wraps ENOSPC: errors.Is(ErrDiskFull, syscall.ENOSPC)
	// holds. An append refused with it wrote nothing; retry once space
	// is freed.
	ErrDiskFull = fmt.Errorf("storage: disk full: %w", syscall.ENOSPC)
	// ErrDiskFullAtClose: Close could not finish cleanly, for lack of
	// space only (the final checkpoint, the seal of a refused append's
	// tail or a ConsumeQueue entry could not be written). Everything
	// acknowledged is durable; the abort marker stays and the next Open
	// recovers. It wraps ErrDiskFull.
	ErrDiskFullAtClose = fmt.Errorf("storage: closed uncleanly for lack of space (the next Open recovers): %w", ErrDiskFull)
	// ErrCorrupt: the files on disk are damaged in a way a crash cannot
	// explain (a bad record below the durable offset, a missing segment);
	// Open refuses to cut acknowledged data. A *CorruptError gives the
	// offset. A read that meets a corrupt record returns a
	// *CorruptRecordError (get_verify.go), which matches it too.
	ErrCorrupt = errors.New("storage: corrupt")
	// ErrNotFound: no record at that CommitLog offset (below the min
	// offset, deleted, or past the written one).
	ErrNotFound = errors.New("storage: no record there")
	// ErrResourceBusy: the process ran short of a resource the kernel
	// hands out (file descriptors: EMFILE, ENFILE; memory for a mapping
	// or a ring: ENOMEM) while opening, creating or mapping a file. The
	// append or read that met it did nothing; the store carries on and
	// the same call succeeds once the resource is free (no restart). It
	// wraps the cause: errors.Is(err, syscall.EMFILE) holds too. The one
	// exception to "did nothing": a FlushSync append whose flush could
	// not open the CommitLog directory to sync it was written, and a
	// later flush makes it durable (as with ErrFlushTimeout, a retry may
	// store it twice).
	ErrResourceBusy = errors.New("storage: out of file descriptors or memory; try again")
	// ErrInvalidMessage: the message cannot be stored (empty or too long
	// topic, properties too long, negative queue id).
	ErrInvalidMessage = errors.New("storage: invalid message")
)

// CorruptError says where recovery found corruption. It matches ErrCorrupt.
// Its message names the problem and the way forward: `samsa store verify`
// to see the damage, `samsa store repair` to cut the log at its last valid
// record (keeping the rest in Dir/lost+found).
type CorruptError struct {
	// Offset is the CommitLog offset of the first bad record.
	Offset int64
	// Resume is the offset of the next valid record found after it, or
	// -1 if none was found.
	Resume int64
	// Durable is the offset below which the log was known durable.
	Durable int64
	// Segment is the file holding Offset.
	Segment string
	// Missing, if positive, is how many bytes below Durable are missing
	// because the log's files end early (a truncated last segment,
	// segment files missing at the end): the file ends at Durable-Missing.
	Missing int64
	// Dir is the store's directory (for the advice), if known.
	Dir string
	// Err is what was wrong with the record.
	Err error
}

func (e *CorruptError) Error() string {
	s := fmt.Sprintf("storage: corrupt commit log at offset %d (%s), below the durable offset %d: %v",
		e.Offset, e.Segment, e.Durable, e.Err)
	if e.Resume >= 0 {
		s += fmt.Sprintf("; valid records resume at %d", e.Resume)
	}
	if e.Missing > 0 {
		s += fmt.Sprintf("; the log's files end at offset %d: the last %d bytes the checkpoint says were durable are missing (a truncated or incompletely copied segment?)",
			e.Durable-e.Missing, e.Missing)
	}
	if e.Dir != "" {
		s += fmt.Sprintf("; run 'samsa store verify %s' to see the damage and 'samsa store repair %s' to cut the log at its last valid record (what follows is kept in %s)",
			e.Dir, e.Dir, filepath.Join(e.Dir, lostFoundDir))
	}
	return s
}

func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// writeError classifies an error of a write, allocate or create: ENOSPC
// becomes ErrDiskFull, a lack of descriptors or memory ErrResourceBusy
// (wrapping err too).
func writeError(op string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: %s: %w", ErrDiskFull, op, err)
	}
	if IsResourceError(err) {
		return fmt.Errorf("%w: %s: %w", ErrResourceBusy, op, err)
	}
	return fmt.Errorf("storage: %s: %w", op, err)
}

// IsResourceError says err is a lack of a kernel resource an open,
// create, mmap or io_uring setup needs (EMFILE, ENFILE, ENOMEM) and not
// already a broken store. Such an error loses nothing: fsync(2) never
// answers these, so a failed sync is never mistaken for one.
func IsResourceError(err error) bool {
	if err == nil || errors.Is(err, ErrBroken) {
		return false
	}
	return errors.Is(err, ErrResourceBusy) || vfs.IsResourceError(err)
}

// resourceError wraps err as ErrResourceBusy if it is a resource error
// (and not already one); other errors are returned as they are.
func resourceError(err error) error {
	if err == nil || errors.Is(err, ErrResourceBusy) || !IsResourceError(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrResourceBusy, err)
}

// brokenError wraps the first fatal error as the sticky one.
func brokenError(err error) error {
	return fmt.Errorf("%w: %w", ErrBroken, err)
}
