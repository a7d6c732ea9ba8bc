package xa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// Group is the producer group of every XA half message: the group txn
// settles them under; no producer of it answers a check-back.
const Group = "SAMSA_XA"

// PropXID is the half message property naming its branch (XID.String).
const PropXID = "SAMSA_XID"

// XA flags of Start and End (xa.h).
const (
	TMNOFLAGS = 0
	TMJOIN    = 0x00200000
	TMRESUME  = 0x08000000
	TMSUCCESS = 0x04000000
	TMFAIL    = 0x20000000
	TMSUSPEND = 0x02000000
)

// Defaults.
const (
	DefaultActiveTimeout = 5 * time.Minute
	DefaultLongPrepared  = time.Minute
	// MaxBranches bounds the branches a broker holds at once.
	MaxBranches = 65536
)

// Txn is what the manager needs of package txn. *txn.Service has it.
type Txn interface {
	// End settles halves (commit or rollback) in one write.
	End(group string, v txn.Verdict, refs []txn.Ref) ([]storage.AppendResult, error)
	// Property reads a property of the half ref names.
	Property(ref txn.Ref, name string) (string, bool, error)
}

// Config is what a Manager needs. FS, ConfigDir, Txn and Sync are
// required.
type Config struct {
	FS        vfs.FS
	ConfigDir string // holds xaPrepared.json
	Txn       Txn
	// Sync makes everything the log holds so far durable (the broker:
	// Store.FlushTo its written offset). Prepare calls it before it
	// saves a branch when there is no Log (a Log's append flushes).
	Sync func(ctx context.Context) error
	// Log, when set, keeps the branch records (the package doc's "Log"):
	// Prepare answers XA_OK only once its prepare record is stored as
	// durably as a send, and Open and Resync rebuild the prepared
	// branches from it. nil: the file alone (a broker with no replica).
	Log Log
	// Master reports whether this broker may write now: Sweep writes
	// floor records only then. nil: always.
	Master func() bool
	// ActiveTimeout: a branch not prepared this long after Start is
	// rolled back by Sweep. Default 5 minutes.
	ActiveTimeout time.Duration
	// LongPrepared: a branch prepared this long is reported by Sweep and
	// Stats (never decided). Default 1 minute.
	LongPrepared time.Duration
	Now          func() time.Time // default time.Now
	Logger       *slog.Logger     // default slog.Default()
}

type state int

const (
	active   state = iota // started, taking messages
	idle                  // ended, not prepared
	prepared              // durable, waiting for commit or rollback
)

type branch struct {
	xid          XID
	st           state
	rollbackOnly bool // ended with TMFAIL
	busy         bool // a prepare, commit or rollback runs
	halves       []txn.Ref
	started      time.Time
	preparedAt   time.Time
	// logged: a prepare record of the branch may be in the log (written,
	// or its write failed after it may have been stored), so its end
	// needs a decision record.
	logged bool
	// recordAt is the LogTopic queue offset of its last stored prepare
	// record, -1 for none: the floor stays at or below it.
	recordAt int64
}

// Manager is the broker's XA branches. See the package doc.
type Manager struct {
	cfg    Config
	saveMu sync.Mutex // serialises saves of the file
	mu     struct {
		sync.Mutex
		branches map[string]*branch
		// inflight counts prepare records being appended: no floor
		// is computed meanwhile, as one may be stored with no
		// branch's recordAt naming it yet.
		inflight int
		// logEnd is past the last branch record known stored (queue
		// offset + 1); lastFloor the floor last recorded or read.
		logEnd, lastFloor int64
	}
	longPrepared atomic.Int64 // as of the last Sweep
	committed    atomic.Int64
	rolledBack   atomic.Int64
}

// file is xaPrepared.json.
type file struct {
	Branches []fileBranch `json:"branches"`
}

type fileBranch struct {
	XID          string     `json:"xid"`
	PreparedAtMs int64      `json:"preparedAtMs"`
	Halves       [][2]int64 `json:"halves"`
}

func (m *Manager) file() jsonfile.File {
	return jsonfile.File{FS: m.cfg.FS, Path: filepath.Join(m.cfg.ConfigDir, "xaPrepared.json")}
}

// Open checks cfg and loads the prepared branches (strictly: a file that
// does not decode is an error).
func Open(cfg Config) (*Manager, error) {
	if cfg.FS == nil || cfg.ConfigDir == "" || cfg.Txn == nil || cfg.Sync == nil {
		return nil, errors.New("xa: FS, ConfigDir, Txn and Sync are required")
	}
	if cfg.ActiveTimeout <= 0 {
		cfg.ActiveTimeout = DefaultActiveTimeout
	}
	if cfg.LongPrepared <= 0 {
		cfg.LongPrepared = DefaultLongPrepared
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg}
	m.mu.branches = map[string]*branch{}
	b, found, err := m.file().Read()
	if err != nil {
		return nil, fmt.Errorf("xa: prepared branches: %w", err)
	}
	if found && len(b) > 0 {
		var f file
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("xa: prepared branches in %s do not decode (%w); the broker will not start and decide them: repair or move the file", m.file().Path, err)
		}
		for _, fb := range f.Branches {
			x, err := ParseXID(fb.XID)
			if err != nil {
				return nil, fmt.Errorf("xa: prepared branches in %s: %w", m.file().Path, err)
			}
			br := &branch{xid: x, st: prepared, preparedAt: time.UnixMilli(fb.PreparedAtMs), recordAt: -1}
			br.started = br.preparedAt
			for _, h := range fb.Halves {
				br.halves = append(br.halves, txn.Ref{HalfOffset: h[0], CommitLogOffset: h[1]})
			}
			m.mu.branches[fb.XID] = br
		}
	}
	if cfg.Log != nil {
		// The log decides the branches it has records of; a branch
		// only the file lists (prepared before the log had records,
		// or whose records retention removed) stays.
		watch := make(map[string]bool, len(m.mu.branches))
		for k := range m.mu.branches {
			watch[k] = true
		}
		rp, err := m.replay(watch)
		if err != nil {
			return nil, err
		}
		for k := range m.mu.branches {
			if _, ok := rp.Prepared[k]; !ok && rp.Decided[k] {
				delete(m.mu.branches, k)
			}
		}
		for k, r := range rp.Prepared {
			m.mu.branches[k] = branchOf(r)
		}
		m.mu.logEnd, m.mu.lastFloor = rp.End, rp.Floor
	}
	if n := len(m.mu.branches); n > 0 {
		cfg.Logger.Info("broker: XA branches prepared before the restart wait for commit or rollback", "branches", n)
	}
	return m, nil
}

// replay reads the branch records of the log: back from its end to the
// last floor record, then forward from that floor.
func (m *Manager) replay(watch map[string]bool) (*Replay, error) {
	rp := &Replay{Prepared: map[string]Record{}, Watch: watch}
	bad := 0
	decode := func(body []byte) (Record, bool) {
		r, err := DecodeRecord(body)
		if err != nil {
			if bad++; bad <= 3 {
				m.cfg.Logger.Warn("broker: an XA branch record that does not decode is skipped", "err", err)
			}
			return r, false
		}
		return r, true
	}
	err := m.cfg.Log.ScanBack(func(off int64, body []byte) bool {
		rp.End = max(rp.End, off+1)
		if r, ok := decode(body); ok && r.Kind == KindFloor && r.Floor <= off {
			rp.Floor = r.Floor
			return true
		}
		return false
	})
	if err == nil {
		err = m.cfg.Log.Scan(rp.Floor, func(off int64, body []byte) {
			rp.End = max(rp.End, off+1)
			if r, ok := decode(body); ok {
				r.At = off
				rp.Add(r)
			}
		})
	}
	if err != nil {
		return nil, fmt.Errorf("xa: read the branch records: %w", err)
	}
	if len(rp.Prepared) > MaxBranches {
		return nil, fmt.Errorf("xa: the log holds %d prepared branches, more than the %d a broker holds", len(rp.Prepared), MaxBranches)
	}
	return rp, nil
}

// writeFloor records the floor (KindFloor) when it moved: the lowest
// prepare record of a branch still known, or the log's end. It writes
// nothing while a prepare record is being appended, nor on a broker
// that is not master.
func (m *Manager) writeFloor() {
	if m.cfg.Log == nil || (m.cfg.Master != nil && !m.cfg.Master()) {
		return
	}
	m.mu.Lock()
	if m.mu.inflight > 0 {
		m.mu.Unlock()
		return
	}
	f := m.mu.logEnd
	for _, br := range m.mu.branches {
		if br.recordAt >= 0 {
			f = min(f, br.recordAt)
		}
	}
	last := m.mu.lastFloor
	m.mu.Unlock()
	if f <= last {
		return
	}
	body, err := (&Record{Kind: KindFloor, Floor: f}).Encode()
	var off int64 = -1
	if err == nil {
		off, err = m.cfg.Log.Append(context.Background(), KindFloor, body, false)
	}
	m.mu.Lock()
	m.mu.logEnd = max(m.mu.logEnd, off+1)
	if err == nil {
		m.mu.lastFloor = max(m.mu.lastFloor, f)
	}
	m.mu.Unlock()
	if err != nil {
		m.cfg.Logger.Debug("broker: the XA branch records' floor is not stored; a replay starts from an older one", "err", err)
	}
}

// branchOf is the prepared branch a prepare record describes.
func branchOf(r Record) *branch {
	return &branch{xid: r.XID, st: prepared, preparedAt: r.PreparedAt, started: r.PreparedAt, halves: r.Halves, logged: true, recordAt: r.At}
}

// Resync replaces every branch by the prepared branches the log's
// records describe, and saves them to the file. The broker calls it when
// a replica becomes master (as txn.Service.Resync): the log, copied from
// the old master, holds its prepare and decision records; the file here
// is this replica's own and out of date. Branches not prepared are
// dropped: they were this replica's while it was master before, and their
// halves, never held since, may have been discarded. Without a Log it
// does nothing.
func (m *Manager) Resync() error {
	if m.cfg.Log == nil {
		return nil
	}
	rp, err := m.replay(nil)
	if err != nil {
		return err
	}
	m.mu.Lock()
	clear(m.mu.branches)
	for k, r := range rp.Prepared {
		m.mu.branches[k] = branchOf(r)
	}
	m.mu.logEnd, m.mu.lastFloor = rp.End, rp.Floor
	m.mu.Unlock()
	if err := m.save(); err != nil {
		// The log holds them; only the cache is stale.
		m.cfg.Logger.Warn("broker: the XA branches rebuilt from the log are not saved to the file", "err", err)
	}
	if n := len(rp.Prepared); n > 0 {
		m.cfg.Logger.Info("broker: XA branches prepared on the old master wait for commit or rollback", "branches", n)
	}
	return nil
}

// save writes every prepared branch to the file.
func (m *Manager) save() error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	f := file{Branches: []fileBranch{}}
	for k, br := range m.mu.branches {
		if br.st != prepared {
			continue
		}
		fb := fileBranch{XID: k, PreparedAtMs: br.preparedAt.UnixMilli()}
		for _, h := range br.halves {
			fb.Halves = append(fb.Halves, [2]int64{h.HalfOffset, h.CommitLogOffset})
		}
		f.Branches = append(f.Branches, fb)
	}
	m.mu.Unlock()
	sort.Slice(f.Branches, func(i, j int) bool { return f.Branches[i].XID < f.Branches[j].XID })
	return m.file().Save(f)
}

// Holds reports whether the half message with these properties belongs
// to a branch the manager knows (txn.Config.Hold): txn's check-back
// leaves it alone.
func (m *Manager) Holds(props []byte) bool {
	v, ok := record.LookupProperty(props, PropXID)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok = m.mu.branches[string(v)]
	return ok
}

// Start begins a branch (TMNOFLAGS), or continues one (TMJOIN,
// TMRESUME).
func (m *Manager) Start(x XID, flags int) error {
	if err := x.Validate(); err != nil {
		return xaErr(ErrINVAL, "%v", err)
	}
	k := x.String()
	m.mu.Lock()
	defer m.mu.Unlock()
	br := m.mu.branches[k]
	switch {
	case flags&^(TMJOIN|TMRESUME) != 0:
		return xaErr(ErrINVAL, "start flags %#x: want TMNOFLAGS, TMJOIN or TMRESUME", flags)
	case flags == TMNOFLAGS && br != nil:
		return xaErr(ErrDUPID, "branch %s exists", k)
	case flags != TMNOFLAGS && br == nil:
		return xaErr(ErrNOTA, "no branch %s to join or resume", k)
	case br != nil && br.st == prepared:
		return xaErr(ErrPROTO, "branch %s is prepared", k)
	case br != nil:
		br.st = active
		return nil
	case len(m.mu.branches) >= MaxBranches:
		return xaErr(ErrRMFAIL, "%d branches open, the most a broker holds", MaxBranches)
	}
	m.mu.branches[k] = &branch{xid: x, st: active, started: m.cfg.Now(), recordAt: -1}
	return nil
}

// End ends the branch's association: halves are the half messages
// stored in it since Start, each of which must carry the branch's XID.
// TMFAIL marks the branch rollback-only.
func (m *Manager) End(x XID, halves []txn.Ref, flags int) error {
	if err := x.Validate(); err != nil {
		return xaErr(ErrINVAL, "%v", err)
	}
	if flags != TMSUCCESS && flags != TMFAIL && flags != TMSUSPEND && flags != TMNOFLAGS {
		return xaErr(ErrINVAL, "end flags %#x: want TMSUCCESS, TMFAIL or TMSUSPEND", flags)
	}
	k := x.String()
	for _, h := range halves {
		v, ok, err := m.cfg.Txn.Property(h, PropXID)
		if err != nil {
			return xaErr(ErrINVAL, "half %d at %d: %v", h.HalfOffset, h.CommitLogOffset, err)
		}
		if !ok || v != k {
			return xaErr(ErrINVAL, "half %d at %d is not of branch %s", h.HalfOffset, h.CommitLogOffset, k)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	br := m.mu.branches[k]
	switch {
	case br == nil:
		return xaErr(ErrNOTA, "no branch %s", k)
	case br.st == prepared || br.busy:
		return xaErr(ErrPROTO, "branch %s is prepared or being settled", k)
	}
	if len(br.halves)+len(halves) > maxHalves {
		return xaErr(ErrINVAL, "branch %s would hold %d messages, at most %d", k, len(br.halves)+len(halves), maxHalves)
	}
	br.halves = append(br.halves, halves...)
	br.st = idle
	if flags == TMFAIL {
		br.rollbackOnly = true
	}
	return nil
}

// maxHalves bounds a branch's messages.
const maxHalves = 4096
