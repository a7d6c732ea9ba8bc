package xa

import (
	"context"
	"errors"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/storage"
)

// claim marks the branch busy for a verb; wantPrepared says which state
// the verb needs (nil: either).
func (m *Manager) claim(x XID, verb string, wantPrepared *bool) (*branch, error) {
	if err := x.Validate(); err != nil {
		return nil, xaErr(ErrINVAL, "%v", err)
	}
	k := x.String()
	m.mu.Lock()
	defer m.mu.Unlock()
	br := m.mu.branches[k]
	switch {
	case br == nil:
		return nil, xaErr(ErrNOTA, "no branch %s (never started, settled already, or forgotten by a restart before it was prepared)", k)
	case br.busy:
		return nil, xaErr(ErrRMFAIL, "branch %s is being prepared or settled; try again", k)
	case br.st == active:
		return nil, xaErr(ErrPROTO, "%s of branch %s before its end", verb, k)
	case wantPrepared != nil && *wantPrepared && br.st != prepared:
		return nil, xaErr(ErrPROTO, "%s of branch %s, which is not prepared", verb, k)
	case wantPrepared != nil && !*wantPrepared && br.st == prepared:
		return nil, xaErr(ErrPROTO, "%s of branch %s, which is prepared", verb, k)
	}
	br.busy = true
	return br, nil
}

// release ends a verb: the branch is dropped (settled) or left as it is.
func (m *Manager) release(br *branch, drop bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	br.busy = false
	if k := br.xid.String(); drop && m.mu.branches[k] == br { // Resync may have replaced it
		delete(m.mu.branches, k)
	}
}

// no is the state claim wants for a verb on a branch not prepared.
var no = false

// Prepare makes an ended branch durable: OK, or RDONLY for a branch with
// no messages (forgotten at once). A rollback-only branch is rolled back
// and answers RBROLLBACK.
func (m *Manager) Prepare(ctx context.Context, x XID) (int, error) {
	br, err := m.claim(x, "prepare", &no)
	if err != nil {
		return 0, err
	}
	if br.rollbackOnly {
		if err := m.settle(br, txn.Rollback); err != nil {
			m.release(br, false)
			return 0, err
		}
		m.release(br, true)
		return 0, xaErr(RBROLLBACK, "branch %s was ended with TMFAIL; rolled back", x)
	}
	if len(br.halves) == 0 {
		m.release(br, true)
		return RDONLY, nil
	}
	at := m.cfg.Now()
	if m.cfg.Log == nil {
		if err := m.cfg.Sync(ctx); err != nil {
			m.release(br, false)
			return 0, xaErr(ErrRMFAIL, "flush the branch's messages: %v", err)
		}
	} else {
		// The prepare record follows the halves in the log: once it is
		// durable (and on a SYNC_MASTER replicated), so are they; one
		// flush covers both.
		rec := Record{Kind: KindPrepare, XID: br.xid, PreparedAt: at, Halves: br.halves}
		body, err := rec.Encode()
		if err != nil {
			m.release(br, false)
			return 0, xaErr(ErrRMERR, "branch %s: %v", x, err)
		}
		m.mu.Lock()
		m.mu.inflight++
		m.mu.Unlock()
		off, err := m.cfg.Log.Append(ctx, KindPrepare, body, true)
		m.mu.Lock()
		m.mu.inflight--
		br.logged = true // stored even if not acknowledged: its end needs a decision record
		if off >= 0 {
			br.recordAt = off
			m.mu.logEnd = max(m.mu.logEnd, off+1)
		}
		m.mu.Unlock()
		if err != nil {
			m.release(br, false)
			return 0, xaErr(ErrRMFAIL, "record the prepared branch: %v", err)
		}
	}
	m.mu.Lock()
	br.st, br.preparedAt = prepared, at
	m.mu.Unlock()
	if err := m.save(); err != nil {
		if m.cfg.Log == nil {
			m.mu.Lock()
			br.st = idle
			m.mu.Unlock()
			m.release(br, false)
			return 0, xaErr(ErrRMFAIL, "save the prepared branch: %v", err)
		}
		// The log holds the branch; the file is its cache.
		m.cfg.Logger.Warn("broker: a prepared XA branch is in the log but not in the file", "xid", x.String(), "err", err)
	}
	m.release(br, false)
	return OK, nil
}

// Commit delivers the branch's messages: a prepared one (onePhase false)
// or an ended one at once (onePhase true).
func (m *Manager) Commit(ctx context.Context, x XID, onePhase bool) error {
	want := !onePhase
	br, err := m.claim(x, "commit", &want)
	if err != nil {
		return err
	}
	if onePhase && br.rollbackOnly {
		err := m.settle(br, txn.Rollback)
		m.release(br, err == nil)
		if err != nil {
			return err
		}
		return xaErr(RBROLLBACK, "branch %s was ended with TMFAIL; rolled back", x)
	}
	return m.finish(br, txn.Commit)
}

// Rollback drops the branch's messages (prepared or not).
func (m *Manager) Rollback(ctx context.Context, x XID) error {
	br, err := m.claim(x, "rollback", nil)
	if err != nil {
		return err
	}
	return m.finish(br, txn.Rollback)
}

// finish settles a claimed branch and forgets it.
func (m *Manager) finish(br *branch, v txn.Verdict) error {
	if err := m.settle(br, v); err != nil {
		m.release(br, false)
		return err
	}
	if br.logged && m.cfg.Log != nil {
		// After the settlement in the log: a replica that has this
		// record has the settlement too. Written while the branch is
		// still claimed, so that no branch reusing the XID can put its
		// prepare record before it. Not waited for: a lost one lists
		// the settled branch again, and settling it again writes
		// nothing.
		kind := byte(KindCommit)
		if v == txn.Rollback {
			kind = KindRollback
		}
		body, err := (&Record{Kind: kind, XID: br.xid}).Encode()
		if err == nil {
			var off int64
			off, err = m.cfg.Log.Append(context.Background(), kind, body, false)
			m.mu.Lock()
			m.mu.logEnd = max(m.mu.logEnd, off+1)
			m.mu.Unlock()
		}
		if err != nil { // settled: a promoted replica lists it again, and settling again writes nothing
			m.cfg.Logger.Warn("broker: an XA branch is settled but its decision record is not stored; a restart or fail-over offers it to recover again",
				"xid", br.xid.String(), "err", err)
		}
	}
	wasPrepared := br.st == prepared
	m.release(br, true)
	if v == txn.Commit {
		m.committed.Add(1)
	} else {
		m.rolledBack.Add(1)
	}
	if wasPrepared {
		if err := m.save(); err != nil { // settled: a restart lists it again, and settling again writes nothing
			m.cfg.Logger.Warn("broker: an XA branch is settled but still listed as prepared; a restart offers it to recover again",
				"xid", br.xid.String(), "err", err)
		}
	}
	return nil
}

// settle ends the branch's halves as v.
func (m *Manager) settle(br *branch, v txn.Verdict) error {
	if len(br.halves) == 0 {
		return nil
	}
	_, err := m.cfg.Txn.End(Group, v, br.halves)
	var refErr *txn.RefError
	switch {
	case err == nil, errors.Is(err, txn.ErrSettled), errors.Is(err, storage.ErrFlushTimeout):
		return nil
	case errors.As(err, &refErr):
		return xaErr(ErrRMERR, "branch %s: %v", br.xid, err)
	}
	return xaErr(ErrRMFAIL, "branch %s: %v", br.xid, err)
}

// Forget would discard a heuristically completed branch; this manager
// makes no heuristic decisions, so a known branch answers XAER_PROTO.
func (m *Manager) Forget(x XID) error {
	if err := x.Validate(); err != nil {
		return xaErr(ErrINVAL, "%v", err)
	}
	m.mu.Lock()
	_, ok := m.mu.branches[x.String()]
	m.mu.Unlock()
	if !ok {
		return xaErr(ErrNOTA, "no branch %s", x)
	}
	return xaErr(ErrPROTO, "branch %s was not completed heuristically (this broker never decides a branch on its own)", x)
}

// Branch is a prepared branch, as Recover lists it.
type Branch struct {
	XID        XID
	PreparedAt time.Time
	Messages   int
}

// Recover lists the prepared branches, oldest first.
func (m *Manager) Recover() []Branch {
	m.mu.Lock()
	out := make([]Branch, 0, len(m.mu.branches))
	for _, br := range m.mu.branches {
		if br.st == prepared {
			out = append(out, Branch{XID: br.xid, PreparedAt: br.preparedAt, Messages: len(br.halves)})
		}
	}
	m.mu.Unlock()
	sortBranches(out)
	return out
}

// Stats are the manager's counts.
type Stats struct {
	Active, Prepared int
	// LongPrepared: prepared longer than Config.LongPrepared at the last
	// Sweep.
	LongPrepared          int64
	Committed, RolledBack int64
}

// Stats returns the counts now.
func (m *Manager) Stats() Stats {
	s := Stats{LongPrepared: m.longPrepared.Load(), Committed: m.committed.Load(), RolledBack: m.rolledBack.Load()}
	m.mu.Lock()
	for _, br := range m.mu.branches {
		if br.st == prepared {
			s.Prepared++
		} else {
			s.Active++
		}
	}
	m.mu.Unlock()
	return s
}

// Sweep rolls back the branches left unprepared longer than
// Config.ActiveTimeout and counts (and logs) those prepared longer than
// Config.LongPrepared. The broker calls it every few seconds.
func (m *Manager) Sweep() {
	now := m.cfg.Now()
	var stale []XID
	var long int64
	m.mu.Lock()
	for _, br := range m.mu.branches {
		switch {
		case br.st == prepared && now.Sub(br.preparedAt) >= m.cfg.LongPrepared:
			long++
		case br.st != prepared && !br.busy && now.Sub(br.started) >= m.cfg.ActiveTimeout:
			stale = append(stale, br.xid)
		}
	}
	m.mu.Unlock()
	if old := m.longPrepared.Swap(long); long > old {
		m.cfg.Logger.Warn("broker: XA branches prepared long ago wait for their coordinator's commit or rollback (samsa txn list)",
			"branches", long, "longer than", m.cfg.LongPrepared)
	}
	for _, x := range stale {
		if br, err := m.claim(x, "rollback", &no); err == nil {
			if err := m.finish(br, txn.Rollback); err != nil {
				m.cfg.Logger.Warn("broker: an XA branch left unprepared was not rolled back", "xid", x.String(), "err", err)
				continue
			}
			m.cfg.Logger.Info("broker: an XA branch left unprepared too long is rolled back", "xid", x.String(), "after", m.cfg.ActiveTimeout)
		} else if br == nil {
			var e *Error
			if errors.As(err, &e) && e.Code == ErrPROTO { // active: it has no halves known yet; forget it
				m.mu.Lock()
				delete(m.mu.branches, x.String())
				m.mu.Unlock()
			}
		}
	}
	m.writeFloor()
}
