package storage

import (
	"errors"
	"runtime"
	"slices"
	"sync"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/consumequeue"
)

// Reads for a sender that ships records from the files.
//
// GetMessagesFile picks records as GetMessages does (the same
// ConsumeQueue walk, tag filter, limits and quarantine look-ups) but does
// not read them: it says where they lie, as runs of segment files
// (GetResult.Files), and a sender writes them from there with sendfile(2)
// (Kafka's transfer, RocketMQ's transferMsgByHeap=false). The records are
// not checked: whoever receives them must check their CRCs (Samsa's
// client does). A run is one piece: adjacent records of one segment.
//
// A run costs a system call; a read block cache hit (queues that
// interleave in the log: a pull's records are runs of one) costs a copy
// of the run. Reads whose runs average less than minFileRun bytes, and
// reads where any picked record cannot be sent from a file (a segment
// without a descriptor or without FileSource, bytes still in a write
// buffer, a segment closed under the read), fall back to
// GetMessagesPooled's read (span reads, the block cache) but do not
// check the records either: the receiver does.

// minFileRun is the shortest run a read sends from the file on average:
// below it, one system call a run costs more than copying the run out of
// the read block cache (measured: 8 interleaved queues, runs of one 1 KiB
// record, drained at 1.6x the process CPU per GiB of the copying path in
// a quick experiments/read-path.json run on a loaded machine).
const minFileRun = 16 << 10

// readMode says how getMessages hands its records out.
type readMode uint8

const (
	readNew      readMode = iota // into a new buffer (GetMessages)
	readPooled                   // into a pooled buffer (GetMessagesPooled)
	readFromFile                 // as file pieces when it can (GetMessagesFile)
)

// FilePiece is a run of n bytes at Off of the file open as Fd.
type FilePiece struct {
	Fd  int
	Off int64
	N   int
}

// FileRecords are a read's records as pieces of segment files, in order.
// The descriptors are the read's own (duplicates): the segments may be
// closed and deleted meanwhile, and the bytes stay readable until Close.
// A FileRecords dropped without Close closes its descriptors when the
// garbage collector finds it (a frame queued on a connection that closed).
type FileRecords struct {
	Pieces []FilePiece
	// LastPhys is the CommitLog offset of the last record.
	LastPhys int64
	fds      *fdSet
}

// fdSet owns a read's duplicated descriptors.
type fdSet struct {
	fds     []int
	once    sync.Once
	cleanup runtime.Cleanup
}

func (s *fdSet) add(fd int) {
	s.fds = append(s.fds, fd)
}

// seal registers the collector's close, once every descriptor is in.
func (s *fdSet) seal() {
	s.cleanup = runtime.AddCleanup(s, closeFds, slices.Clone(s.fds))
}

func (s *fdSet) close() {
	s.once.Do(func() {
		s.cleanup.Stop()
		closeFds(s.fds)
	})
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = backend.CloseDup(fd)
	}
}

// Len is the bytes of every piece.
func (f *FileRecords) Len() int {
	n := 0
	for _, p := range f.Pieces {
		n += p.N
	}
	return n
}

// Close closes the descriptors; the pieces are no longer readable.
func (f *FileRecords) Close() {
	if f.fds != nil {
		f.fds.close()
	}
	f.Pieces, f.fds = nil, nil
}

// GetMessagesFile is GetMessagesPooled for a sender that writes the
// records from the segment files (above): a Found result holds them in
// Files (Records and Whole nil, QueueOffsets and Bytes set) unless it
// fell back to reading them. The caller calls res.Release once sent.
func (s *Store) GetMessagesFile(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int,
	tagFilter func(tagsCode int64) bool) (GetResult, error) {
	return s.getMessagesRetry(readFromFile, topic, queueID, offset, maxMsgs, maxBytes, tagFilter)
}

// fileRecords fills res with picked as file pieces; false (res untouched)
// when some record cannot be sent from a file.
func (s *Store) fileRecords(res *GetResult, picked []consumequeue.Entry, offsets []int64, total int) bool {
	runs := 1
	for i := 1; i < len(picked); i++ {
		if picked[i].PhysOffset != picked[i-1].PhysOffset+int64(picked[i-1].Size) || !s.sameSegment(picked[i-1].PhysOffset, picked[i].PhysOffset) {
			runs++
		}
	}
	if total/runs < minFileRun {
		return false
	}
	fds := &fdSet{}
	f := FileRecords{fds: fds}
	ok := false
	defer func() {
		if !ok {
			closeFds(fds.fds)
		}
	}()
	curBase, curFd, curLimit := int64(-1), -1, int64(0)
	for _, e := range picked {
		base := e.PhysOffset - e.PhysOffset%s.segSize
		if base != curBase {
			fd, limit, err := s.dupSegment(base)
			if err != nil {
				return false
			}
			fds.add(fd)
			curBase, curFd, curLimit = base, fd, limit
		}
		off := e.PhysOffset - base
		if off+int64(e.Size) > curLimit {
			return false // still in a write buffer
		}
		if n := len(f.Pieces); n > 0 && f.Pieces[n-1].Fd == curFd && f.Pieces[n-1].Off+int64(f.Pieces[n-1].N) == off {
			f.Pieces[n-1].N += int(e.Size)
			continue
		}
		f.Pieces = append(f.Pieces, FilePiece{Fd: curFd, Off: off, N: int(e.Size)})
	}
	ok = true
	fds.seal()
	f.LastPhys = picked[len(picked)-1].PhysOffset
	res.Files = f
	res.QueueOffsets = offsets
	res.Bytes = total
	res.Status = Found
	return true
}

// dupSegment duplicates the descriptor of the segment starting at base.
func (s *Store) dupSegment(base int64) (int, int64, error) {
	s.segs.RLock()
	defer s.segs.RUnlock()
	g := s.segmentAtLocked(base)
	if g == nil || g.base != base {
		return -1, 0, ErrNotFound
	}
	src, ok := g.seg.(backend.FileSource)
	if !ok {
		return -1, 0, backend.ErrNoFile
	}
	fd, limit, err := src.DupFile()
	if err != nil {
		return -1, 0, err
	}
	if fd < 0 {
		return -1, 0, errors.New("storage: no descriptor")
	}
	return fd, limit, nil
}
