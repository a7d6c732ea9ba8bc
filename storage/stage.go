package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/vfs"
)

// Stages (backend/stage.go; the default of pwrite, odirect and uring under
// async and none flush, Options.NoStage turns them off): a staging store
// keeps each writable segment's write buffer in a shared mapping of a file
// under Dir/stage, named as the segment (pwrite: its write buffer; odirect
// and uring: their append ring, written behind the appender in whole
// aligned blocks). Appends are in the kernel once copied, as mmap's are
// (ho.inAppend), so there is no hand-over. Recovery replays
// every stage before it lists the log (whatever Options say now: the last
// run may have staged) and treats a replay as an unclean stop.
//
//	Dir/stage/<segment name>   a header page and the segment's buffer

// stageDirName is the stages' directory under Dir.
const stageDirName = "stage"

// stageUse says whether o and be stage appends (see Options.NoStage).
func stageUse(o Options, be backend.Backend) bool {
	if o.NoStage || o.Flush.Policy == FlushSync || o.AckBuffered {
		return false
	}
	if st, is := be.(backend.Stager); !is || !st.Stages() {
		return false
	}
	_, ok, _ := vfs.BootID(o.FS)
	return ok
}

// Stages says whether a store opened with o keeps its appends in stages
// (Options.NoStage): for a staging backend under async and none flush,
// unless AckBuffered, on a file system that names its boot.
func (o Options) Stages() bool {
	be := o.segmentBackend()
	return be != nil && stageUse(o, be)
}

// segConfig is the backend configuration of the segment file at path
// holding written bytes (0 for Create).
func (s *Store) segConfig(path string, written int64) backend.Config {
	c := backend.Config{FS: s.fs, Path: path, Capacity: s.segSize, Written: written, Preallocate: s.opts.Preallocate}
	if s.staged {
		c.StagePath = filepath.Join(s.dir, stageDirName, filepath.Base(path))
	}
	return c
}

// replayStages writes what the stages a crash left hold into their
// segment files and removes them (backend.ReplayStage); it says whether
// any bytes were replayed. A stage of another boot, or whose segment is
// gone, is removed with a log line saying so.
func (s *Store) replayStages() (bool, error) {
	return replayStageDir(s.fs, s.dir, s.segSize, s.log)
}

// stageNames lists the stage files under the store in dir.
func stageNames(fsys vfs.FS, dir string) ([]string, error) {
	names, err := fsys.List(filepath.Join(dir, stageDirName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return names, err
}

// replayStageDir is replayStages for the store in dir (Open's, and
// Repair's before it looks for a cut).
func replayStageDir(fsys vfs.FS, storeDir string, segSize int64, log *slog.Logger) (bool, error) {
	dir := filepath.Join(storeDir, stageDirName)
	clDir := filepath.Join(storeDir, "commitlog")
	names, err := stageNames(fsys, storeDir)
	if err != nil {
		return false, fmt.Errorf("storage: list %s: %w", dir, err)
	}
	replayed := false
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, ok := parseSegmentName(n); !ok {
			log.Warn("storage: ignoring a file that is not a stage", "dir", dir, "name", n)
			continue
		}
		r, err := backend.ReplayStage(fsys, p, filepath.Join(clDir, n), segSize)
		if err != nil {
			return false, fmt.Errorf("storage: replay stage: %w", err)
		}
		if r.Replayed {
			replayed = true
			log.Info("storage: replayed a stage a crash left (bytes the kernel held)", "segment", n,
				"from", r.From, "to", r.To)
			continue
		}
		log.Warn("storage: dropped a stage without replaying it", "segment", n, "from", r.From, "to", r.To, "why", r.Why)
	}
	if len(names) > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			return false, fmt.Errorf("storage: sync dir %s: %w", dir, err)
		}
	}
	return replayed, nil
}
