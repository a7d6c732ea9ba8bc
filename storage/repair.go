package storage

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// Repair makes a store that will not open openable again (`samsa store
// repair DIR`): a truncated or corrupt tail below the checkpoint's
// durable offset (after a clean stop, say), segment files missing or
// damaged at the end, a damaged checkpoint. It scans the log as recovery
// does (from the checkpoint's segment; from the first without one) and:
//
//  1. writes a checkpoint that is not clean, with the durable offset at
//     the cut (the end of the last whole valid record) and no per-queue
//     cross-check, so the next Open runs recovery: it re-scans, trims the
//     queues and re-indexes from the dispatched offset (lowered to the
//     cut);
//  2. moves what lies past the cut to Dir/lost+found/<time>/ with a
//     manifest (lostfound.go) and truncates the cut segment there;
//  3. trims every ConsumeQueue to the cut.
//
// Each step leaves a store the next Open (or Repair) can finish from: the
// checkpoint comes first, so a crash after it leaves an ordinary torn
// tail. With DryRun it only reads and reports the plan. It takes the
// store's LOCK, so it refuses a running store.
//
// Corruption below where recovery starts (an old sealed segment) is not
// Repair's: the store opens, Verify and the scrubber report it, and
// cutting there would take every later record out of the log.

// RepairOptions say which store Repair mends.
type RepairOptions struct {
	// Dir is the store's directory (required).
	Dir string
	// FS is the file system. Default vfs.Default.
	FS vfs.FS
	// SegmentSize as in VerifyOptions. Default 0: the checkpoint's, else
	// the spacing of the segment files.
	SegmentSize int64
	// DryRun reads and reports the plan; it changes nothing.
	DryRun bool
	// Holes writes a hole over a damaged record that valid records follow
	// instead of cutting the log there (repair_hole.go). Only for a store
	// with no replica: a replica that cut at the damage copies the rest
	// again from its master, while a hole would stand, in a group, for an
	// acknowledged record the others hold. Default false: cut.
	Holes bool
	// Logger gets the Warn line of the move to lost+found. Default
	// slog.Default().
	Logger *slog.Logger
	// Clock names the lost+found directory. Default time.Now.
	Clock func() time.Time
}

// RepairReport says what Repair did (or, with DryRun, would do).
type RepairReport struct {
	Dir    string `json:"dir"`
	DryRun bool   `json:"dryRun"`
	// Needed is false when the store needs no repair (nothing changed).
	Needed bool `json:"needed"`
	// Cut is where the log ends after the repair.
	Cut int64 `json:"cut"`
	// Why is what ended the log at Cut ("" if the log ends sealed).
	Why string `json:"why,omitempty"`
	// LostFound is the directory the removed bytes went to ("" if none
	// or a dry run); Lost says what they held.
	LostFound string            `json:"lostFound,omitempty"`
	Lost      LostFoundManifest `json:"lost"`
	// EntriesDropped counts ConsumeQueue entries at or past the cut.
	EntriesDropped int64 `json:"entriesDropped"`
	// Holes are the damaged records with valid records after them that
	// became holes (repair_hole.go) instead of the log's end; their bytes
	// went to HolesLostFound.
	Holes          []RepairHole `json:"holes,omitempty"`
	HolesLostFound string       `json:"holesLostFound,omitempty"`
	// Actions are the steps, in order, for a person.
	Actions []string `json:"actions"`
}

// RepairHole is one hole a repair wrote over a damaged record.
type RepairHole struct {
	Offset      int64  `json:"offset"`
	Size        int    `json:"size"`
	Topic       string `json:"topic"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	Why         string `json:"why"`
}

// WriteText writes the report for a person; it returns w's error.
func (r *RepairReport) WriteText(w io.Writer) error {
	var b strings.Builder
	switch {
	case !r.Needed:
		fmt.Fprintf(&b, "store %s needs no repair: the log's valid records end at %d, where the checkpoint says\n", r.Dir, r.Cut)
	case r.DryRun:
		fmt.Fprintf(&b, "store %s: repair plan (dry run, nothing changed):\n", r.Dir)
	default:
		fmt.Fprintf(&b, "store %s repaired:\n", r.Dir)
	}
	for _, a := range r.Actions {
		fmt.Fprintf(&b, "  - %s\n", a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *RepairReport) act(format string, args ...any) {
	r.Actions = append(r.Actions, fmt.Sprintf(format, args...))
}

// Repair mends the stopped store in opts.Dir (see above).
func Repair(opts RepairOptions) (RepairReport, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	r := RepairReport{Dir: opts.Dir, DryRun: opts.DryRun, Actions: []string{}}
	a, err := openAtRest(opts.FS, opts.Dir, opts.SegmentSize)
	if err != nil {
		return r, err
	}
	defer a.close()
	if stages, err := stageNames(a.fs, a.dir); err != nil {
		return r, fmt.Errorf("storage: list stages: %w", err)
	} else if len(stages) > 0 {
		// Bytes a process crash left in the kernel: the log's before
		// any cut is looked for (Open would replay them first too).
		if opts.DryRun {
			r.act("would replay %d stage files a crash left (%s) into their segments, those made in this boot", len(stages), strings.Join(stages, ", "))
		} else {
			if _, err := replayStageDir(a.fs, a.dir, a.segSize, opts.Logger); err != nil {
				return r, err
			}
			r.act("replayed %d stage files a crash left (%s) into their segments, those made in this boot", len(stages), strings.Join(stages, ", "))
			a.files, a.others = nil, nil
			if err := a.read(a.segSize); err != nil {
				return r, err
			}
		}
	}
	if a.haveCk && a.ck.segSize != a.segSize {
		return r, fmt.Errorf("storage: %s was made with segment size %d, not %d: not repairable that way", a.dir, a.ck.segSize, a.segSize)
	}
	files, rest, err := a.contiguous()
	if err != nil {
		return r, err
	}
	p, sealed, holes, err := a.findCut(files, rest, opts.Holes)
	if err != nil {
		return r, err
	}
	r.Holes = make([]RepairHole, len(holes))
	for i, h := range holes {
		r.Holes[i] = RepairHole{Offset: h.phys(), Size: h.size, Topic: h.topic, QueueID: h.qid, QueueOffset: h.qoff, Why: h.why}
	}
	r.Cut, r.Lost = p.cut, p.lost
	if p.why != nil {
		r.Why = p.why.Error()
	}
	ends, err := queueEndsAtRest(a.fs, filepath.Join(a.dir, "consumequeue"))
	if err != nil {
		return r, err
	}
	var short []string
	for k, n := range a.ck.queues {
		if ends[k] < n {
			short = append(short, fmt.Sprintf("%s/%d ends at %d, the checkpoint had %d", k.topic, k.qid, ends[k], n))
		}
	}
	slices.Sort(short)
	r.Needed = p.keeps() || a.ckErr != nil || (a.haveCk && a.ck.durable > p.cut) || len(short) > 0 || len(holes) > 0
	if !r.Needed {
		return r, nil
	}
	verb := func(do, would string) string {
		if opts.DryRun {
			return would
		}
		return do
	}
	switch {
	case a.ckErr != nil:
		r.act("the checkpoint is damaged (%v)", a.ckErr)
	case a.haveCk && a.ck.durable > p.cut:
		r.act("the checkpoint says the log is durable to %d; its valid records end at %d (%d bytes short)", a.ck.durable, p.cut, a.ck.durable-p.cut)
	}
	if sealed {
		r.act("the log's segments are whole up to %d", p.cut)
	} else {
		r.act("the log's last whole valid record ends at %d in %s (%v)", p.cut, relPath(a.dir, p.seg.path), p.why)
	}
	for _, h := range holes {
		r.act("the record at %d (%s/%d queue offset %d, %d bytes) is damaged (%s) and valid records follow it: %s a hole there (its queue offset stays; reads skip it) and its bytes to lost+found",
			h.phys(), h.topic, h.qid, h.qoff, h.size, h.why, verb("wrote", "would write"))
	}
	ck := a.newCheckpoint(files, p.cut)
	if len(holes) > 0 {
		ck.dispatched = min(ck.dispatched, holes[0].phys()) // re-index the holes and what follows
	}
	if len(short) > 0 {
		r.act("consume queues behind the checkpoint (%s): the next Open re-indexes the whole log into them", strings.Join(short, "; "))
		if len(files) > 0 {
			ck.dispatched = files[0].base
		}
	}
	r.act("%s a checkpoint that is not clean: durable %d, dispatched %d; the next Open scans from there, re-indexes and checks the cut",
		verb("wrote", "would write"), ck.durable, ck.dispatched)
	if !opts.DryRun {
		if err := writeAtomic(a.fs, a.ckPath(), ck.encode()); err != nil {
			return r, err
		}
	}
	if len(holes) > 0 {
		if !opts.DryRun {
			dir, err := makeLostFoundDir(a.fs, a.dir, opts.Clock())
			if err == nil {
				err = writeHoles(a.fs, dir, holes)
			}
			if err != nil {
				return r, err
			}
			r.HolesLostFound = dir
			opts.Logger.Warn("storage: repair wrote holes over damaged records with valid records after them; their bytes are in lost+found",
				"dir", dir, "holes", len(holes))
		}
		n, err := trimQueuesAtRest(a.fs, filepath.Join(a.dir, "consumequeue"), holes[0].phys(), opts.DryRun)
		if err != nil {
			return r, err
		}
		r.act("%s %d consume queue entries at or past the first hole (%d): the next Open indexes them again", verb("dropped", "would drop"), n, holes[0].phys())
	}
	if !p.tail.zeros() {
		r.act("%s the %d bytes of %s from %d (%d non-zero; %s) to lost+found and %s it there",
			verb("moved", "would move"), p.tail.end-p.segCut, relPath(a.dir, p.seg.path), p.cut, p.tail.nonZero, p.lost.Files[0].Valid, verb("truncated", "truncate"))
	}
	for _, f := range p.lost.Files {
		if f.NonZeroBytes == 0 {
			r.act("%s segment %s (%d bytes; %s) to lost+found", verb("moved", "would move"), f.From, f.Bytes, f.Valid)
		}
	}
	if !opts.DryRun {
		reason := fmt.Sprintf("samsa store repair: the log's valid records end at %d (%v)", p.cut, p.why)
		if r.LostFound, err = applyCut(a.fs, a.dir, &p, opts.Clock(), reason, 0, opts.Logger); err != nil {
			return r, err
		}
		if r.LostFound != "" {
			r.act("lost+found: %s (manifest.json says what each file held)", r.LostFound)
		}
	}
	dropped, err := trimQueuesAtRest(a.fs, filepath.Join(a.dir, "consumequeue"), p.cut, opts.DryRun)
	r.EntriesDropped = dropped
	if err != nil {
		return r, err
	}
	r.act("%s %d consume queue entries at or past %d", verb("dropped", "would drop"), dropped, p.cut)
	return r, nil
}

// contiguous splits the segment files into the contiguous run from the
// first one and the rest (after a gap).
func (a *atRest) contiguous() (run, rest []segmentFile, err error) {
	for i, f := range a.files {
		if f.base%a.segSize != 0 || f.size > a.segSize {
			return nil, nil, fmt.Errorf("storage: segment %s does not fit segment size %d (was the store made with another?)", f.path, a.segSize)
		}
		if i > 0 && f.base != a.files[i-1].base+a.segSize {
			return a.files[:i], a.files[i:], nil
		}
	}
	return a.files, nil, nil
}

// findCut scans the run from where recovery would start and plans the
// cut; the files after a gap go too. sealed says the run ends sealed.
func (a *atRest) findCut(run, rest []segmentFile, bridge bool) (p cutPlan, sealed bool, holes []hole, err error) {
	sc := a.sc()
	if len(run) == 0 {
		return cutPlan{lost: LostFoundManifest{Store: a.dir, SegmentSize: a.segSize}, tail: tailInfo{}}, true, nil, nil
	}
	start := run[0].base
	if a.haveCk {
		start = max(min(a.ck.durable, a.ck.dispatched), start)
	}
	all := append(append([]segmentFile(nil), run...), rest...)
	for i, f := range run {
		if start >= f.base+a.segSize && i < len(run)-1 {
			continue
		}
		rd, err := openSegReader(a.fs, f.path)
		if err != nil {
			return p, false, holes, err
		}
		s, err := sc.scanSegment(rd, f.base)
		if err == nil && !s.sealed && bridge {
			var hs []hole
			hs, s, err = a.bridge(rd, f, s)
			holes = append(holes, hs...)
		}
		_ = rd.Close()
		if err != nil {
			return p, false, holes, err
		}
		if !s.sealed {
			p, err = sc.planCut(a.fs, a.dir, all, i, s.end, s.bad)
			return p, false, holes, err
		}
	}
	i := len(run) - 1
	p, err = sc.planCut(a.fs, a.dir, all, i, a.segSize, nil)
	return p, true, holes, err
}

// newCheckpoint is the checkpoint Repair writes for a log ending at cut.
func (a *atRest) newCheckpoint(run []segmentFile, cut int64) checkpoint {
	c := checkpoint{segSize: a.segSize, durable: cut, timeMs: time.Now().UnixMilli(), queues: map[queueKey]int64{}}
	if a.haveCk {
		c.dispatched = min(a.ck.dispatched, cut)
	} else if len(run) > 0 {
		c.dispatched = run[0].base
	}
	return c
}

// writeAtomic replaces name with b durably (temp file, sync, rename, sync
// of the directory).
func writeAtomic(fsys vfs.FS, name string, b []byte) error {
	tmp := name + ".tmp"
	if err := writeSynced(fsys, tmp, b); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, name); err != nil {
		return fmt.Errorf("storage: rename %s: %w", tmp, err)
	}
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", filepath.Dir(name), err)
	}
	return nil
}
