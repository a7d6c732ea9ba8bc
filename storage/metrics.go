package storage

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/samsamq/samsa/storage/backend"
)

// Metrics is a snapshot of the store's counters.
type Metrics struct {
	Appends     int64 // records appended
	AppendBytes int64 // their bytes
	// Fsyncs and FlushBatches are the backends' counters (Backend), summed
	// over every segment, deleted ones included.
	Fsyncs       int64
	FlushBatches int64
	// AvgBatch is appends per fsync (0 before the first fsync).
	AvgBatch float64
	// Flushes are flusher rounds that made something durable; each is a
	// FlushLatency sample (directory sync and every segment's flush).
	Flushes int64
	// SyncGroups are group-commit rounds (FlushSync) and AvgGroup the
	// appends each released on average.
	SyncGroups int64
	AvgGroup   float64
	// Waits are the waiters queued for a group-commit round: sync
	// appends (one per Append or AppendBatch) and FlushTo calls that
	// waited.
	Waits int64
	// FlushLatency is a copy of the flush-round latency histogram, in
	// microseconds.
	FlushLatency                 *hdrhistogram.Histogram
	FlushP50, FlushP99, FlushMax time.Duration
	Backend                      backend.Stats
	DirSyncs                     int64 // commitlog directory syncs after segment creation
	FlushedBytes                 int64 // bytes made durable
	WrittenOffset                int64
	DurableOffset                int64
	DispatchedOffset             int64
	MinOffset                    int64 // CommitLogMinOffset
	Segments                     int
	Rolls                        int64         // segments created by appends
	SegmentsDeleted              int64         // by retention
	WriteErrors                  int64         // appends refused by a write, seal or create error
	DispatchErrors               int64         // ConsumeQueue append attempts that failed (each is retried)
	DispatchHeld                 int64         // records waiting for a retry of their ConsumeQueue append
	DispatchOutages              int64         // times records started to be held (one log line each)
	ReserveSpent                 int64         // times the index reserve was freed for held entries (reserve.go)
	ReadOnly                     bool          // appends refused for lack of space (ErrDiskFull) until it returns
	PendingFull                  int64         // sync appends that waited for a MaxPending slot
	WaitAbandoned                int64         // sync appends that stopped waiting (timeout, context)
	Gathers                      int64         // sync rounds that waited for released writers to return
	GatherMisses                 int64         // of those, the ones whose wait ended unfilled
	GatherTime                   time.Duration // the flusher's time in those waits
	OwnRounds                    int64         // sync rounds a lone writer ran itself (lone.go)
	// CorruptRecords are the corrupt records reads found since Open
	// (each counted once); Quarantined the records in the quarantine
	// now, found by this run or an earlier one (get_verify.go).
	CorruptRecords int64
	Quarantined    int
	Broken         bool
	// WriteOuts are hand-over rounds (handoff.go): write-outs that moved
	// HandedOffset; HandOffsFree the hand-overs another appender's write
	// covered.
	WriteOuts, HandOffsFree int64
	HandedOffset            int64
	// The scrubber's (scrub.go): bytes and sealed segments it re-read,
	// and the distinct bad records it found (see ScrubStatus).
	ScrubBytes, ScrubSegments, ScrubCorrupt int64
	// StartupVerifiedBytes counts the bytes Open's verification checked
	// (verify_open.go; its findings are counted in ScrubCorrupt);
	// Unverified is what it has left (Store.Unverified), VerifiedOffset
	// the verified mark (verified.go).
	StartupVerifiedBytes, Unverified, VerifiedOffset int64
	// ReadCacheHits and ReadCacheMisses count the read block cache's
	// blocks found and read (blockcache.go).
	ReadCacheHits, ReadCacheMisses int64
	// ReadCacheDirect counts the misses read with O_DIRECT
	// (Options.DirectColdReads).
	ReadCacheDirect int64
	// CutRecords and CutBytes count what TruncateTo cut from the log since
	// Open (a replica following a new master); every byte is kept in
	// lost+found.
	CutRecords, CutBytes int64
	// RepairedBytes counts the bytes RepairRange wrote back from a healthy
	// copy since Open.
	RepairedBytes int64
}

// metrics are the live counters behind Metrics.
type metrics struct {
	appends, appendBytes, writeErrors, rolls, pendingFull, waitAbandoned atomic.Int64
	groups, groupWaiters, dirSyncs, flushedBytes, flushes                atomic.Int64
	dispatchErrors, segmentsDeleted, gathers, gatherMisses, gatherNanos  atomic.Int64
	ownRounds, waits                                                     atomic.Int64
	writeOuts, handOffFree                                               atomic.Int64
	corruptRecords, reserveSpent                                         atomic.Int64
	scrubBytes, scrubSegments, scrubCorrupt, startupVerifiedBytes        atomic.Int64
	cutRecords, cutBytes, repairedBytes                                  atomic.Int64

	// quarantine is the read path's list of corrupt records
	// (quarantine.go); like the counters, Open makes it with the Store.
	quarantine quarantine

	mu struct {
		sync.Mutex
		hist    *hdrhistogram.Histogram // flush latency, µs
		deleted backend.Stats           // counters of segments retention closed
	}
}

// flushHistMaxUs is the flush-latency histogram's highest value (60 s,
// in µs); a longer flush is recorded at it rather than dropped.
const flushHistMaxUs = 60_000_000

func (m *metrics) init() {
	m.mu.hist = hdrhistogram.New(1, flushHistMaxUs, 3)
}

func (m *metrics) recordFlush(d time.Duration) {
	m.flushes.Add(1)
	m.mu.Lock()
	// Clamped into range, RecordValue cannot fail: a flush stalled past
	// the histogram's top (the case that matters most) is not lost from it.
	_ = m.mu.hist.RecordValue(min(max(d.Microseconds(), 1), flushHistMaxUs))
	m.mu.Unlock()
}

func (m *metrics) addDeleted(st backend.Stats) {
	m.mu.Lock()
	m.mu.deleted = m.mu.deleted.Add(st)
	m.mu.Unlock()
}

// Metrics returns a snapshot of the store's counters.
func (s *Store) Metrics() Metrics {
	m := &s.m
	out := Metrics{
		Appends:              m.appends.Load(),
		AppendBytes:          m.appendBytes.Load(),
		Flushes:              m.flushes.Load(),
		SyncGroups:           m.groups.Load(),
		DirSyncs:             m.dirSyncs.Load(),
		FlushedBytes:         m.flushedBytes.Load(),
		WrittenOffset:        s.written.Load(),
		DurableOffset:        s.durable.Load(),
		DispatchedOffset:     s.dispatchOK.Load(), // indexed: held records are not
		MinOffset:            s.CommitLogMinOffset(),
		Rolls:                m.rolls.Load(),
		SegmentsDeleted:      m.segmentsDeleted.Load(),
		WriteErrors:          m.writeErrors.Load(),
		DispatchErrors:       m.dispatchErrors.Load(),
		DispatchHeld:         s.hold.n.Load(),
		DispatchOutages:      s.hold.outages.Load(),
		ReserveSpent:         m.reserveSpent.Load(),
		ReadOnly:             s.ReadOnly(),
		PendingFull:          m.pendingFull.Load(),
		WaitAbandoned:        m.waitAbandoned.Load(),
		Gathers:              m.gathers.Load(),
		GatherMisses:         m.gatherMisses.Load(),
		GatherTime:           time.Duration(m.gatherNanos.Load()),
		OwnRounds:            m.ownRounds.Load(),
		CorruptRecords:       m.corruptRecords.Load(),
		Quarantined:          s.quarantine().len(),
		Broken:               s.Err() != nil,
		WriteOuts:            m.writeOuts.Load(),
		HandOffsFree:         m.handOffFree.Load(),
		HandedOffset:         s.handed.Load(),
		ScrubBytes:           m.scrubBytes.Load(),
		ScrubSegments:        m.scrubSegments.Load(),
		ScrubCorrupt:         m.scrubCorrupt.Load(),
		StartupVerifiedBytes: m.startupVerifiedBytes.Load(),
		Unverified:           s.Unverified(),
		VerifiedOffset:       s.VerifiedOffset(),
		CutRecords:           m.cutRecords.Load(),
		CutBytes:             m.cutBytes.Load(),
		RepairedBytes:        m.repairedBytes.Load(),
		ReadCacheHits:        s.rc.hitCount(),
		ReadCacheMisses:      s.rc.missCount(),
		ReadCacheDirect:      s.rc.directCount(),
		Waits:                m.waits.Load(),
	}
	if out.SyncGroups > 0 {
		out.AvgGroup = float64(m.groupWaiters.Load()) / float64(out.SyncGroups)
	}
	m.mu.Lock()
	st := m.mu.deleted
	out.FlushLatency = hdrhistogram.Import(m.mu.hist.Export())
	m.mu.Unlock()
	s.segs.RLock()
	for _, g := range s.segs.list {
		st = st.Add(g.seg.Stats())
	}
	out.Segments = len(s.segs.list)
	s.segs.RUnlock()
	out.Backend = st
	out.Fsyncs = st.Fsyncs
	out.FlushBatches = st.FlushBatches
	if st.Fsyncs > 0 {
		out.AvgBatch = float64(out.Appends) / float64(st.Fsyncs)
	}
	h := out.FlushLatency
	out.FlushP50 = time.Duration(h.ValueAtQuantile(50)) * time.Microsecond
	out.FlushP99 = time.Duration(h.ValueAtQuantile(99)) * time.Microsecond
	out.FlushMax = time.Duration(h.Max()) * time.Microsecond
	return out
}

// DiskUsage reports the total and free bytes of the file system holding
// the CommitLog (what retention's DiskRatio watches).
func (s *Store) DiskUsage() (total, free uint64, err error) {
	return s.fs.DiskUsage(s.clDir)
}
