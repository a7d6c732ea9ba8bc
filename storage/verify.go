package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// Verify checks a stopped store at rest, reading everything and changing
// nothing (`samsa store verify DIR`):
//
//   - every CommitLog segment, record by record: magic, size bounds,
//     physical-offset identity, body and whole-record CRCs, the blank
//     that seals each segment but the last, consecutive queue offsets per
//     queue; past a bad record it searches for the next valid one, so one
//     flipped byte is one problem, not the end of the check;
//   - every ConsumeQueue entry against the log: it points at a valid
//     record of its topic and queue, with the entry's size and queue
//     offset; entries are in log order; each queue indexes every record
//     of its queue the log holds;
//   - the checkpoint: intact, same segment size, durable offset not past
//     the log's valid end, per-queue offsets not past the queues.
//
// It takes the store's LOCK (through VerifyOptions.FS), so it refuses a
// store a process has open. Corruption goes into the report, not the
// error; the error is for what stops the check (no store there, the lock,
// I/O). A problem a restart repairs by itself (a torn tail after a
// crash, queues behind the log) is a note, not corruption.

// VerifyOptions say which store Verify checks and how.
type VerifyOptions struct {
	// Dir is the store's directory (required).
	Dir string
	// FS is the file system. Default vfs.Default.
	FS vfs.FS
	// SegmentSize is the store's segment size. Default 0: the
	// checkpoint's, else the spacing of the segment files' names.
	SegmentSize int64
	// MaxProblems bounds the problems the report lists (the counts stay
	// exact). Default 1000.
	MaxProblems int
	// Acked, if above 0, is an offset the store's group acknowledged (every
	// replica of its sync-state set held it): a log that ends below it
	// lacks acknowledged messages, reported as corruption of this copy.
	// AckedFrom says where the figure comes from (the broker's ha/acked
	// mark, or an operator's). Replicated logs only.
	Acked     int64
	AckedFrom string
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Dir         string `json:"dir"`
	SegmentSize int64  `json:"segmentSize"`
	// Abort says the abort marker is there: the store was not closed
	// cleanly (the next Open scans and cuts a torn tail).
	Abort      bool              `json:"abort"`
	Checkpoint *VerifyCheckpoint `json:"checkpoint,omitempty"`
	Segments   int               `json:"segments"`
	Records    int64             `json:"records"`
	// RecordBytes is the bytes of the valid records.
	RecordBytes int64 `json:"recordBytes"`
	// LogStart is the first segment's offset; LogEnd where the last
	// segment's valid records end (where recovery would end the log).
	LogStart int64 `json:"logStart"`
	LogEnd   int64 `json:"logEnd"`
	Queues   int   `json:"queues"`
	Entries  int64 `json:"entries"`
	// Acked and AckedFrom are VerifyOptions' (what the group acknowledged).
	Acked     int64  `json:"acked,omitempty"`
	AckedFrom string `json:"ackedFrom,omitempty"`
	// Corruptions and Notes count the problems of each severity, all of
	// them; Problems lists the first MaxProblems.
	Corruptions int             `json:"corruptions"`
	Notes       int             `json:"notes"`
	Problems    []VerifyProblem `json:"problems"`
	Took        time.Duration   `json:"took"`

	max int
}

// VerifyCheckpoint is the checkpoint as Verify read it.
type VerifyCheckpoint struct {
	Clean      bool      `json:"clean"`
	Durable    int64     `json:"durable"`
	Dispatched int64     `json:"dispatched"`
	Time       time.Time `json:"time"`
	Queues     int       `json:"queues"`
}

// Severities of a VerifyProblem.
const (
	// SevCorrupt: damage a restart cannot explain or repair by itself.
	SevCorrupt = "corrupt"
	// SevNote: something a restart handles (a torn tail after a crash,
	// queues behind the log), or worth knowing.
	SevNote = "note"
)

// VerifyProblem is one thing Verify found wrong.
type VerifyProblem struct {
	Severity string `json:"severity"`
	// File is the file, relative to Dir.
	File string `json:"file"`
	// Offset is the CommitLog offset (-1 if none applies).
	Offset int64  `json:"offset"`
	What   string `json:"what"`
}

// Corrupt reports whether Verify found corruption.
func (r *VerifyReport) Corrupt() bool { return r.Corruptions > 0 }

func (r *VerifyReport) add(sev, file string, off int64, format string, args ...any) {
	if sev == SevCorrupt {
		r.Corruptions++
	} else {
		r.Notes++
	}
	if len(r.Problems) < r.max {
		r.Problems = append(r.Problems, VerifyProblem{Severity: sev, File: relPath(r.Dir, file), Offset: off, What: fmt.Sprintf(format, args...)})
	}
}

// WriteText writes the report for a person; it returns w's error.
func (r *VerifyReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "store %s (segment size %d)\n", r.Dir, r.SegmentSize)
	stop := "clean stop"
	if r.Abort {
		stop = "not stopped cleanly (abort marker present): the next Open scans the tail"
	}
	fmt.Fprintf(&b, "  state:       %s\n", stop)
	if c := r.Checkpoint; c != nil {
		fmt.Fprintf(&b, "  checkpoint:  clean=%t durable=%d dispatched=%d queues=%d written %s\n",
			c.Clean, c.Durable, c.Dispatched, c.Queues, c.Time.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(&b, "  checkpoint:  none\n")
	}
	fmt.Fprintf(&b, "  commit log:  %d segments, %d records (%d bytes), offsets [%d, %d)\n",
		r.Segments, r.Records, r.RecordBytes, r.LogStart, r.LogEnd)
	fmt.Fprintf(&b, "  queues:      %d, %d entries\n", r.Queues, r.Entries)
	if r.Acked > 0 {
		fmt.Fprintf(&b, "  acked:       %d (%s)\n", r.Acked, r.AckedFrom)
	}
	for _, p := range r.Problems {
		off := ""
		if p.Offset >= 0 {
			off = fmt.Sprintf(" @%d", p.Offset)
		}
		fmt.Fprintf(&b, "  %-7s %s%s: %s\n", p.Severity, p.File, off, p.What)
	}
	if n := r.Corruptions + r.Notes - len(r.Problems); n > 0 {
		fmt.Fprintf(&b, "  ... and %d more problems\n", n)
	}
	switch {
	case r.Corrupt():
		fmt.Fprintf(&b, "CORRUPT: %d problems of corruption, %d notes (checked in %v)\n", r.Corruptions, r.Notes, r.Took.Round(time.Millisecond))
	default:
		fmt.Fprintf(&b, "OK: no corruption, %d notes (checked in %v)\n", r.Notes, r.Took.Round(time.Millisecond))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Verify checks the stopped store in opts.Dir (see above).
func Verify(opts VerifyOptions) (VerifyReport, error) {
	start := time.Now()
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 1000
	}
	r := VerifyReport{Dir: opts.Dir, max: opts.MaxProblems, Problems: []VerifyProblem{}}
	at, err := openAtRest(opts.FS, opts.Dir, opts.SegmentSize)
	if err != nil {
		return r, err
	}
	defer at.close()
	r.SegmentSize, r.Abort = at.segSize, at.abort
	if at.ckErr != nil {
		r.add(SevCorrupt, at.ckPath(), -1, "%v", at.ckErr)
	}
	if c := at.ck; at.haveCk {
		r.Checkpoint = &VerifyCheckpoint{Clean: c.clean, Durable: c.durable, Dispatched: c.dispatched,
			Time: time.UnixMilli(c.timeMs), Queues: len(c.queues)}
		if c.segSize != at.segSize {
			r.add(SevCorrupt, at.ckPath(), -1, "checkpoint says segment size %d, the store is read with %d", c.segSize, at.segSize)
		}
	}
	if lf, err := at.fs.List(filepath.Join(at.dir, lostFoundDir)); err == nil && len(lf) > 0 {
		r.add(SevNote, filepath.Join(at.dir, lostFoundDir), -1,
			"%d directories of bytes recovery or repair cut off the log (newest %s; each manifest.json says what it holds): remove them once checked", len(lf), lf[len(lf)-1])
	}
	if st, err := stageNames(at.fs, at.dir); err == nil && len(st) > 0 {
		r.add(SevNote, filepath.Join(at.dir, stageDirName), -1,
			"%d stage files a crash left (%s): their segments' last bytes are there, not yet in the log; the next Open or repair replays those made in this boot", len(st), strings.Join(st, ", "))
	}
	v := &verifier{at: at, r: &r, logQueues: map[queueKey]*logQueue{}}
	if err := v.checkLog(); err != nil {
		return r, err
	}
	v.checkCheckpoint()
	v.checkAcked(opts.Acked, opts.AckedFrom)
	if err := v.checkQueues(); err != nil {
		return r, err
	}
	r.Took = time.Since(start)
	return r, nil
}

// atRest is a store opened for Verify or Repair: locked, its checkpoint
// read, its segment files listed. Nothing is changed.
type atRest struct {
	fs      vfs.FS
	dir     string
	clDir   string
	lock    io.Closer
	abort   bool
	ck      checkpoint
	haveCk  bool
	ckErr   error // the checkpoint is there but damaged
	segSize int64
	files   []segmentFile
	others  []string // names in commitlog that are not segments
}

func (a *atRest) ckPath() string { return filepath.Join(a.dir, "checkpoint") }
func (a *atRest) close()         { _ = a.lock.Close() } // read only: nothing to lose
func (a *atRest) sc() scanner    { return scanner{segSize: a.segSize} }

// openAtRest locks the store in dir and reads what it is made of.
func openAtRest(fsys vfs.FS, dir string, segSize int64) (*atRest, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", dir, err)
	}
	if !slices.Contains(names, "commitlog") {
		return nil, fmt.Errorf("storage: %s is not a store (no commitlog directory)", dir)
	}
	a := &atRest{fs: fsys, dir: dir, clDir: filepath.Join(dir, "commitlog")}
	a.lock, err = fsys.Lock(filepath.Join(dir, "LOCK"))
	if err != nil {
		return nil, fmt.Errorf("storage: %s is in use (its LOCK is held: stop the broker first): %w", dir, err)
	}
	if err := a.read(segSize); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *atRest) read(segSize int64) error {
	var err error
	if a.abort, err = exists(a.fs, filepath.Join(a.dir, "abort")); err != nil {
		return fmt.Errorf("storage: stat abort marker: %w", err)
	}
	b, err := readFile(a.fs, a.ckPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("storage: read %s: %w", a.ckPath(), err)
	default:
		a.ck, a.ckErr = decodeCheckpoint(b)
		a.haveCk = a.ckErr == nil
		if a.ckErr != nil && segSize == 0 && len(b) >= 20 && string(b[:8]) == checkpointMagic {
			segSize = damagedCheckpointSegSize(b) // a hint, checked below
		}
	}
	names, err := a.fs.List(a.clDir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", a.clDir, err)
	}
	for _, n := range names {
		base, ok := parseSegmentName(n)
		if !ok {
			a.others = append(a.others, n)
			continue
		}
		p := filepath.Join(a.clDir, n)
		size, err := a.fs.Stat(p)
		if err != nil {
			return fmt.Errorf("storage: stat %s: %w", p, err)
		}
		a.files = append(a.files, segmentFile{base: base, path: p, size: size})
	}
	switch {
	case segSize > 0:
		a.segSize = segSize
	case a.haveCk:
		a.segSize = a.ck.segSize
	case len(a.files) > 1:
		a.segSize = a.files[1].base - a.files[0].base
	case len(a.files) == 0:
		a.segSize = DefaultSegmentSize
	default:
		return fmt.Errorf("storage: %s: no checkpoint and one segment: cannot tell the segment size; give it", a.dir)
	}
	if len(a.files) > 1 && a.segSize > 0 && (a.files[1].base-a.files[0].base)%a.segSize != 0 {
		return fmt.Errorf("storage: %s: segment files are %d apart, not a multiple of the segment size %d; give the right one", a.dir, a.files[1].base-a.files[0].base, a.segSize)
	}
	if a.segSize < MinSegmentSize || a.segSize > MaxSegmentSize || a.segSize%pageSize != 0 {
		return fmt.Errorf("storage: %s: segment size %d is not a valid one; give it", a.dir, a.segSize)
	}
	return nil
}

// damagedCheckpointSegSize reads the segment size field of a checkpoint
// whose CRC fails (0 if it is not a valid size): the size is fixed for a
// store's life, so it is worth a try before asking the operator.
func damagedCheckpointSegSize(b []byte) int64 {
	n := int64(binary.BigEndian.Uint64(b[12:20]))
	if n < MinSegmentSize || n > MaxSegmentSize || n%pageSize != 0 {
		return 0
	}
	return n
}
