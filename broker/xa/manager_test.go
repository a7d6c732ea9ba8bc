package xa

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

// fakeTxn is txn.Service's part the manager uses: halves by commit-log
// offset with their XID, and the verdicts given.
type fakeTxn struct {
	xids     map[int64]string
	verdicts map[int64]txn.Verdict
	fail     error
}

func (f *fakeTxn) End(group string, v txn.Verdict, refs []txn.Ref) ([]storage.AppendResult, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	settled := 0
	for _, r := range refs {
		if _, ok := f.verdicts[r.CommitLogOffset]; ok {
			settled++
			continue
		}
		f.verdicts[r.CommitLogOffset] = v
	}
	if settled == len(refs) {
		return nil, txn.ErrSettled
	}
	return nil, nil
}

func (f *fakeTxn) Property(ref txn.Ref, name string) (string, bool, error) {
	x, ok := f.xids[ref.CommitLogOffset]
	if !ok {
		return "", false, errors.New("no such half")
	}
	return x, name == PropXID, nil
}

func xid(g string) XID { return XID{FormatID: 1, GTRID: []byte(g), BQUAL: []byte("b")} }

func code(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -999
	}
	return OK
}

func open(t *testing.T, fs vfs.FS, f *fakeTxn, now *time.Time) *Manager {
	t.Helper()
	m, err := Open(Config{FS: fs, ConfigDir: "/cfg", Txn: f, Sync: func(context.Context) error { return nil },
		Now: func() time.Time { return *now }, ActiveTimeout: time.Minute, LongPrepared: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLifecycle walks branches through the verbs, out-of-order verbs
// included, and restarts the manager: prepared branches come back,
// others are gone.
func TestLifecycle(t *testing.T) {
	fs := vfs.NewMem()
	a, b, c := xid("a"), xid("b"), xid("c")
	f := &fakeTxn{xids: map[int64]string{10: a.String(), 20: a.String(), 30: b.String(), 40: c.String()}, verdicts: map[int64]txn.Verdict{}}
	now := time.Unix(1000, 0)
	m := open(t, fs, f, &now)
	ctx := context.Background()
	must := func(want int, err error) {
		t.Helper()
		if got := code(err); got != want {
			t.Fatalf("got %s (%v), want %s", CodeName(got), err, CodeName(want))
		}
	}
	must(OK, m.Start(a, TMNOFLAGS))
	must(ErrDUPID, m.Start(a, TMNOFLAGS))
	must(ErrNOTA, m.Start(b, TMJOIN))
	must(ErrINVAL, m.Start(XID{FormatID: 1}, TMNOFLAGS))
	_, err := m.Prepare(ctx, a)
	must(ErrPROTO, err)                                                                  // not ended
	must(ErrINVAL, m.End(a, []txn.Ref{{HalfOffset: 3, CommitLogOffset: 30}}, TMSUCCESS)) // b's half
	must(OK, m.End(a, []txn.Ref{{HalfOffset: 1, CommitLogOffset: 10}, {HalfOffset: 2, CommitLogOffset: 20}}, TMSUCCESS))
	rc, err := m.Prepare(ctx, a)
	must(OK, err)
	if rc != OK {
		t.Fatalf("prepare = %d", rc)
	}
	must(ErrPROTO, m.Commit(ctx, a, true)) // one-phase of a prepared branch
	must(ErrPROTO, m.Forget(a))
	must(OK, m.Start(b, TMNOFLAGS))
	must(OK, m.End(b, []txn.Ref{{HalfOffset: 3, CommitLogOffset: 30}}, TMSUCCESS))
	_, err = m.Prepare(ctx, b)
	must(OK, err)
	must(OK, m.Start(c, TMNOFLAGS)) // never prepared
	if !m.Holds([]byte(PropXID + "\x01" + c.String() + "\x02")) {
		t.Fatal("an active branch's half is not held")
	}
	// Restart: a and b are prepared, c is forgotten.
	now = now.Add(2 * time.Hour)
	m = open(t, fs, f, &now)
	got := m.Recover()
	if len(got) != 2 || got[0].XID.String() != a.String() || got[1].XID.String() != b.String() || got[0].Messages != 2 {
		t.Fatalf("recover after restart = %+v", got)
	}
	if m.Holds([]byte(PropXID + "\x01" + c.String() + "\x02")) {
		t.Fatal("a branch forgotten by the restart still holds its halves")
	}
	m.Sweep()
	if s := m.Stats(); s.LongPrepared != 2 || s.Prepared != 2 {
		t.Fatalf("stats = %+v, want 2 long prepared", s)
	}
	if len(f.verdicts) != 0 {
		t.Fatalf("sweep decided prepared branches: %v", f.verdicts)
	}
	f.fail = errors.New("disk on fire")
	must(ErrRMFAIL, m.Commit(ctx, a, false))
	f.fail = nil
	must(OK, m.Commit(ctx, a, false))
	must(ErrNOTA, m.Commit(ctx, a, false))
	must(OK, m.Rollback(ctx, b))
	if f.verdicts[10] != txn.Commit || f.verdicts[20] != txn.Commit || f.verdicts[30] != txn.Rollback {
		t.Fatalf("verdicts = %v", f.verdicts)
	}
	m = open(t, fs, f, &now)
	if got := m.Recover(); len(got) != 0 {
		t.Fatalf("settled branches listed after a restart: %+v", got)
	}
}

// TestReadOnlyAndTimeout: a branch with no messages prepares read-only;
// one left unprepared is rolled back by Sweep after ActiveTimeout; one
// ended with TMFAIL rolls back at prepare.
func TestReadOnlyAndTimeout(t *testing.T) {
	a, b, c := xid("a"), xid("b"), xid("c")
	f := &fakeTxn{xids: map[int64]string{10: b.String(), 20: c.String()}, verdicts: map[int64]txn.Verdict{}}
	now := time.Unix(1000, 0)
	m := open(t, vfs.NewMem(), f, &now)
	ctx := context.Background()
	_ = m.Start(a, TMNOFLAGS)
	_ = m.End(a, nil, TMSUCCESS)
	if rc, err := m.Prepare(ctx, a); err != nil || rc != RDONLY {
		t.Fatalf("prepare of an empty branch = %d, %v", rc, err)
	}
	_ = m.Start(b, TMNOFLAGS)
	_ = m.End(b, []txn.Ref{{HalfOffset: 1, CommitLogOffset: 10}}, TMSUCCESS)
	_ = m.Start(c, TMNOFLAGS)
	_ = m.End(c, []txn.Ref{{HalfOffset: 2, CommitLogOffset: 20}}, TMFAIL)
	if _, err := m.Prepare(ctx, c); code(err) != RBROLLBACK || f.verdicts[20] != txn.Rollback {
		t.Fatalf("prepare of a TMFAIL branch: %v, verdicts %v", err, f.verdicts)
	}
	now = now.Add(2 * time.Minute)
	m.Sweep()
	if f.verdicts[10] != txn.Rollback {
		t.Fatalf("an unprepared branch past its timeout was not rolled back: %v", f.verdicts)
	}
	if _, err := m.Prepare(ctx, b); code(err) != ErrNOTA {
		t.Fatalf("prepare after the timeout: %v", err)
	}
}

// TestBadFile: a prepared-branches file that does not decode stops Open.
func TestBadFile(t *testing.T) {
	fs := vfs.NewMem()
	_ = fs.MkdirAll("/cfg")
	w, _ := fs.Create("/cfg/xaPrepared.json", vfs.OpenOptions{})
	_, _ = w.WriteAt([]byte("{not json"), 0)
	_ = w.Close()
	_, err := Open(Config{FS: fs, ConfigDir: "/cfg", Txn: &fakeTxn{}, Sync: func(context.Context) error { return nil }})
	if err == nil {
		t.Fatal("a bad file was taken")
	}
}
