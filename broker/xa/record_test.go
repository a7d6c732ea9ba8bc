package xa

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/storage/vfs"
)

// TestRecordRoundTrip: every kind of record decodes to what was encoded.
func TestRecordRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	for _, r := range []Record{
		{Kind: KindPrepare, XID: XID{FormatID: 7, GTRID: []byte("g"), BQUAL: nil}, PreparedAt: at,
			Halves: []txn.Ref{{HalfOffset: 0, CommitLogOffset: 0}}},
		{Kind: KindPrepare, XID: XID{FormatID: -2, GTRID: bytes.Repeat([]byte{0xff}, MaxGTRID), BQUAL: bytes.Repeat([]byte{1}, MaxBQUAL)},
			PreparedAt: at, Halves: func() []txn.Ref {
				hs := make([]txn.Ref, maxHalves)
				for i := range hs {
					hs[i] = txn.Ref{HalfOffset: int64(i), CommitLogOffset: 1<<40 + int64(i)}
				}
				return hs
			}()},
		{Kind: KindCommit, XID: XID{FormatID: 1, GTRID: []byte("abc"), BQUAL: []byte("q")}},
		{Kind: KindRollback, XID: XID{FormatID: 0, GTRID: []byte{0}}},
		{Kind: KindFloor, Floor: 1 << 50},
	} {
		b, err := r.Encode()
		if err != nil {
			t.Fatalf("encode %c: %v", r.Kind, err)
		}
		got, err := DecodeRecord(b)
		if err != nil {
			t.Fatalf("decode %c: %v", r.Kind, err)
		}
		if got.XID.String() != r.XID.String() || got.Kind != r.Kind || !got.PreparedAt.Equal(r.PreparedAt) || !reflect.DeepEqual(got.Halves, r.Halves) || got.Floor != r.Floor {
			t.Fatalf("round trip of %c: got %+v", r.Kind, got)
		}
	}
}

// TestRecordBadInput: what Encode refuses, and every malformed body
// DecodeRecord meets (truncated anywhere, a count past the bytes, trailing
// bytes, an unknown version or kind) is an error, never a panic or a large
// allocation.
func TestRecordBadInput(t *testing.T) {
	x := XID{FormatID: 1, GTRID: []byte("gt"), BQUAL: []byte("bq")}
	for _, r := range []Record{
		{Kind: KindPrepare, XID: x},                                    // no halves
		{Kind: 'X', XID: x},                                            // unknown kind
		{Kind: KindCommit, XID: XID{FormatID: 1}},                      // empty GTRID
		{Kind: KindCommit, XID: XID{FormatID: -1, GTRID: []byte("g")}}, // null XID
		{Kind: KindPrepare, XID: x, Halves: make([]txn.Ref, maxHalves+1)},
		{Kind: KindFloor, Floor: -1},
	} {
		if _, err := r.Encode(); err == nil {
			t.Errorf("encoded %+v", r)
		}
	}
	good, err := (&Record{Kind: KindPrepare, XID: x, PreparedAt: time.UnixMilli(5), Halves: []txn.Ref{{HalfOffset: 1, CommitLogOffset: 2}, {HalfOffset: 3, CommitLogOffset: 4}}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(good); n++ {
		if _, err := DecodeRecord(good[:n]); err == nil {
			t.Errorf("a prepare record cut to %d of %d bytes decoded", n, len(good))
		}
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, b := range map[string][]byte{
		"version":       mutate(func(b []byte) []byte { b[0] = 2; return b }),
		"kind":          mutate(func(b []byte) []byte { b[1] = 'Z'; return b }),
		"gtrid length":  mutate(func(b []byte) []byte { b[6] = 200; return b }),
		"zero gtrid":    mutate(func(b []byte) []byte { b[6] = 0; return b }),
		"halves count":  mutate(func(b []byte) []byte { b[len(b)-2*16-1] = 0xff; b[len(b)-2*16-2] = 0xff; return b }),
		"no halves":     mutate(func(b []byte) []byte { b[len(b)-2*16-1] = 0; b[len(b)-2*16-2] = 0; return b[:len(b)-32] }),
		"trailing":      mutate(func(b []byte) []byte { return append(b, 0) }),
		"decision tail": mutate(func(b []byte) []byte { b[1] = KindCommit; return b }),
		"floor length":  {recordVersion, KindFloor, 0, 0, 0, 0, 0, 0, 0},
		"floor below 0": {recordVersion, KindFloor, 0xff, 0, 0, 0, 0, 0, 0, 0},
	} {
		if _, err := DecodeRecord(b); err == nil {
			t.Errorf("%s: a malformed record decoded", name)
		}
	}
}

func mustEncode(t *testing.T, r Record) []byte {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplay: a decision after a prepare ends the branch; a decision of
// an unknown XID changes nothing; an XID prepared again after its
// decision is prepared; the last prepare record of a branch wins.
func TestReplay(t *testing.T) {
	a, b, c, d := xid("a"), xid("b"), xid("c"), xid("d")
	h := []txn.Ref{{HalfOffset: 1, CommitLogOffset: 100}}
	h2 := []txn.Ref{{HalfOffset: 2, CommitLogOffset: 200}, {HalfOffset: 3, CommitLogOffset: 300}}
	rp := &Replay{Watch: map[string]bool{c.String(): true, d.String(): true}}
	for _, r := range []Record{
		{Kind: KindCommit, XID: d},              // unknown: ignored
		{Kind: KindPrepare, XID: a, Halves: h},  // a prepared
		{Kind: KindPrepare, XID: b, Halves: h},  // b prepared
		{Kind: KindCommit, XID: a},              // a committed
		{Kind: KindRollback, XID: a},            // a again: ignored
		{Kind: KindPrepare, XID: c, Halves: h},  // c prepared
		{Kind: KindRollback, XID: c},            // c rolled back
		{Kind: KindPrepare, XID: c, Halves: h2}, // c reused, prepared again
		{Kind: KindPrepare, XID: b, Halves: h2}, // b's prepare retried
	} {
		body := mustEncode(t, r)
		got, err := DecodeRecord(body)
		if err != nil {
			t.Fatal(err)
		}
		rp.Add(got)
	}
	if len(rp.Prepared) != 2 || !reflect.DeepEqual(rp.Prepared[b.String()].Halves, h2) || !reflect.DeepEqual(rp.Prepared[c.String()].Halves, h2) {
		t.Fatalf("prepared after replay: %+v", rp.Prepared)
	}
	if rp.Ignored != 2 {
		t.Fatalf("ignored %d decision records, want 2", rp.Ignored)
	}
	if !rp.Decided[c.String()] || !rp.Decided[d.String()] || rp.Decided[a.String()] {
		t.Fatalf("decided (watched) = %v", rp.Decided)
	}
}

// memLog is a Log in memory, shared by the managers of a test as a
// replicated log would be; fail makes Append fail after storing.
type memLog struct {
	mu     sync.Mutex
	bodies [][]byte
	kinds  []byte
	fail   error
	// onAppend, if set, runs inside Append, after the record is stored.
	onAppend func(kind byte)
	// scannedFrom: where each Scan started.
	scannedFrom []int64
}

func (l *memLog) Append(_ context.Context, kind byte, body []byte, _ bool) (int64, error) {
	l.mu.Lock()
	l.bodies = append(l.bodies, append([]byte(nil), body...))
	l.kinds = append(l.kinds, kind)
	off := int64(len(l.bodies) - 1)
	fail, on := l.fail, l.onAppend
	l.mu.Unlock()
	if on != nil {
		on(kind)
	}
	return off, fail
}

func (l *memLog) Scan(from int64, fn func(int64, []byte)) error {
	l.mu.Lock()
	bs := append([][]byte(nil), l.bodies...)
	l.scannedFrom = append(l.scannedFrom, from)
	l.mu.Unlock()
	for i := max(from, 0); i < int64(len(bs)); i++ {
		fn(i, bs[i])
	}
	return nil
}

func (l *memLog) ScanBack(fn func(int64, []byte) bool) error {
	l.mu.Lock()
	bs := append([][]byte(nil), l.bodies...)
	l.mu.Unlock()
	for i := len(bs) - 1; i >= 0; i-- {
		if fn(int64(i), bs[i]) {
			return nil
		}
	}
	return nil
}

func openLogged(t *testing.T, fs vfs.FS, dir string, f *fakeTxn, l *memLog, now *time.Time) *Manager {
	t.Helper()
	m, err := Open(Config{FS: fs, ConfigDir: dir, Txn: f, Sync: func(context.Context) error { return nil }, Log: l,
		Now: func() time.Time { return *now }, ActiveTimeout: time.Minute, LongPrepared: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRebuildFromLog: a manager on another node (its own, empty config
// directory) sharing the log rebuilds the prepared branches on Resync and
// on Open; commit and rollback there work and write their decisions; a
// branch whose prepare record failed to be acknowledged is not prepared
// for the caller, but its rollback still writes a decision.
func TestRebuildFromLog(t *testing.T) {
	ctx := context.Background()
	a, b, c := xid("a"), xid("b"), xid("c")
	f := &fakeTxn{xids: map[int64]string{10: a.String(), 20: a.String(), 30: b.String(), 40: c.String()}, verdicts: map[int64]txn.Verdict{}}
	l := &memLog{}
	now := time.Unix(1000, 0)
	fs := vfs.NewMem()
	m1 := openLogged(t, fs, "/n1", f, l, &now)
	for _, br := range []struct {
		x XID
		h []txn.Ref
	}{{a, []txn.Ref{{HalfOffset: 1, CommitLogOffset: 10}, {HalfOffset: 2, CommitLogOffset: 20}}}, {b, []txn.Ref{{HalfOffset: 3, CommitLogOffset: 30}}}} {
		if err := m1.Start(br.x, TMNOFLAGS); err != nil {
			t.Fatal(err)
		}
		if err := m1.End(br.x, br.h, TMSUCCESS); err != nil {
			t.Fatal(err)
		}
		if rc, err := m1.Prepare(ctx, br.x); err != nil || rc != OK {
			t.Fatalf("prepare: %d %v", rc, err)
		}
	}
	// c's prepare record is stored but not acknowledged.
	_ = m1.Start(c, TMNOFLAGS)
	_ = m1.End(c, []txn.Ref{{HalfOffset: 4, CommitLogOffset: 40}}, TMSUCCESS)
	l.fail = errors.New("no slave in sync")
	if _, err := m1.Prepare(ctx, c); code(err) != ErrRMFAIL {
		t.Fatalf("prepare with the record unacknowledged: %v", err)
	}
	l.fail = nil
	if got := m1.Recover(); len(got) != 2 {
		t.Fatalf("recover on the first node = %+v", got)
	}
	if string(l.kinds) != "PPP" {
		t.Fatalf("records %q, want three prepare records", l.kinds)
	}

	// The other node, with a stale branch of its own, is promoted.
	m2 := openLogged(t, fs, "/n2", f, l, &now)
	_ = m2.Start(xid("stale"), TMNOFLAGS)
	if err := m2.Resync(); err != nil {
		t.Fatal(err)
	}
	got := m2.Recover()
	if len(got) != 3 || got[0].XID.String() != a.String() || got[0].Messages != 2 {
		t.Fatalf("recover after resync = %+v", got)
	}
	if m2.Holds([]byte(PropXID + "\x01" + xid("stale").String() + "\x02")) {
		t.Fatal("a branch the log does not hold survived resync")
	}
	if !m2.Holds([]byte(PropXID + "\x01" + b.String() + "\x02")) {
		t.Fatal("a rebuilt branch does not hold its halves")
	}
	if err := m2.Commit(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	if err := m2.Rollback(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := m2.Rollback(ctx, c); err != nil {
		t.Fatal(err)
	}
	if f.verdicts[10] != txn.Commit || f.verdicts[20] != txn.Commit || f.verdicts[30] != txn.Rollback || f.verdicts[40] != txn.Rollback {
		t.Fatalf("verdicts = %v", f.verdicts)
	}
	if string(l.kinds) != "PPPCRR" {
		t.Fatalf("records %q, want the decisions after the prepares", l.kinds)
	}
	// A restart of the first node: its file still lists a and b, the log
	// decided them.
	m1 = openLogged(t, fs, "/n1", f, l, &now)
	if got := m1.Recover(); len(got) != 0 {
		t.Fatalf("branches decided in the log listed after a restart: %+v", got)
	}
	if err := m1.Commit(ctx, a, false); code(err) != ErrNOTA {
		t.Fatalf("second commit: %v", err)
	}
}

// TestOpenKeepsFileOnlyBranch: a branch the file lists and the log has no
// record of (prepared before the log held records) stays prepared.
func TestOpenKeepsFileOnlyBranch(t *testing.T) {
	a := xid("a")
	f := &fakeTxn{xids: map[int64]string{10: a.String()}, verdicts: map[int64]txn.Verdict{}}
	now := time.Unix(1000, 0)
	fs := vfs.NewMem()
	m := open(t, fs, f, &now) // no log
	_ = m.Start(a, TMNOFLAGS)
	_ = m.End(a, []txn.Ref{{HalfOffset: 1, CommitLogOffset: 10}}, TMSUCCESS)
	if _, err := m.Prepare(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	m = openLogged(t, fs, "/cfg", f, &memLog{}, &now)
	if got := m.Recover(); len(got) != 1 || !strings.HasPrefix(got[0].XID.String(), "1.") {
		t.Fatalf("recover = %+v", got)
	}
}

// TestDecisionBeforeReuse: while a decision record is written the branch
// is still claimed, so its XID cannot start again and put a prepare
// record before the decision (which a replay would then end).
func TestDecisionBeforeReuse(t *testing.T) {
	ctx := context.Background()
	a := xid("a")
	f := &fakeTxn{xids: map[int64]string{10: a.String()}, verdicts: map[int64]txn.Verdict{}}
	l := &memLog{}
	now := time.Unix(1000, 0)
	m := openLogged(t, vfs.NewMem(), "/cfg", f, l, &now)
	_ = m.Start(a, TMNOFLAGS)
	_ = m.End(a, []txn.Ref{{HalfOffset: 1, CommitLogOffset: 10}}, TMSUCCESS)
	if _, err := m.Prepare(ctx, a); err != nil {
		t.Fatal(err)
	}
	var during error
	l.onAppend = func(kind byte) {
		if kind == KindCommit {
			during = m.Start(a, TMNOFLAGS)
		}
	}
	if err := m.Commit(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	if code(during) != ErrDUPID {
		t.Fatalf("start of the XID while its decision is written: %v, want XAER_DUPID", during)
	}
	if err := m.Start(a, TMNOFLAGS); err != nil {
		t.Fatalf("start of the XID after its decision: %v", err)
	}
}

// TestFloor: Sweep records the floor (the lowest prepare record of a
// branch still known) once the branch below it is settled; a replay then
// starts there and finds the same branches. No floor is written while a
// prepare record is being appended, nor when the broker is not master.
func TestFloor(t *testing.T) {
	ctx := context.Background()
	a, b, c := xid("a"), xid("b"), xid("c")
	f := &fakeTxn{xids: map[int64]string{10: a.String(), 20: b.String(), 30: c.String()}, verdicts: map[int64]txn.Verdict{}}
	l := &memLog{}
	now := time.Unix(1000, 0)
	fs := vfs.NewMem()
	master := true
	m, err := Open(Config{FS: fs, ConfigDir: "/n1", Txn: f, Sync: func(context.Context) error { return nil }, Log: l,
		Master: func() bool { return master }, Now: func() time.Time { return now }, ActiveTimeout: time.Hour, LongPrepared: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(x XID, phys int64) {
		t.Helper()
		_ = m.Start(x, TMNOFLAGS)
		_ = m.End(x, []txn.Ref{{HalfOffset: phys / 10, CommitLogOffset: phys}}, TMSUCCESS)
		if _, err := m.Prepare(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	prepare(a, 10) // record 0
	prepare(b, 20) // record 1
	m.Sweep()
	if string(l.kinds) != "PP" {
		t.Fatalf("records %q: a floor at 0 moved nothing", l.kinds)
	}
	if err := m.Commit(ctx, a, false); err != nil { // record 2
		t.Fatal(err)
	}
	// c's prepare runs while Sweep looks: no floor then.
	l.onAppend = func(kind byte) {
		if kind == KindPrepare {
			m.Sweep()
		}
	}
	prepare(c, 30) // record 3
	l.onAppend = nil
	if string(l.kinds) != "PPCP" {
		t.Fatalf("records %q: a floor written while a prepare record was appended", l.kinds)
	}
	master = false
	m.Sweep()
	if string(l.kinds) != "PPCP" {
		t.Fatalf("records %q: a floor written by a broker not master", l.kinds)
	}
	master = true
	m.Sweep() // record 4: floor 1 (b's prepare record)
	if string(l.kinds) != "PPCPF" {
		t.Fatalf("records %q, want a floor record", l.kinds)
	}
	if r, err := DecodeRecord(l.bodies[4]); err != nil || r.Floor != 1 {
		t.Fatalf("floor record %+v %v, want floor 1", r, err)
	}
	m.Sweep()
	if len(l.kinds) != 5 {
		t.Fatalf("records %q: a floor written again without moving", l.kinds)
	}
	m2 := openLogged(t, fs, "/n2", f, l, &now)
	if err := m2.Resync(); err != nil {
		t.Fatal(err)
	}
	if got := m2.Recover(); len(got) != 2 || got[0].XID.String() != b.String() || got[1].XID.String() != c.String() {
		t.Fatalf("recover after a replay from the floor = %+v", got)
	}
	if from := l.scannedFrom[len(l.scannedFrom)-1]; from != 1 {
		t.Fatalf("replay started at %d, want the floor 1", from)
	}
	// Both settled on the second node: its floor passes every record.
	if err := m2.Rollback(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := m2.Commit(ctx, c, false); err != nil {
		t.Fatal(err)
	}
	m2.Sweep()
	last, err := DecodeRecord(l.bodies[len(l.bodies)-1])
	if err != nil || last.Kind != KindFloor || last.Floor != int64(len(l.bodies)-1) {
		t.Fatalf("last record %+v %v, want a floor at the log's end before it (%d)", last, err, len(l.bodies)-1)
	}
	m3 := openLogged(t, fs, "/n3", f, l, &now)
	if got := m3.Recover(); len(got) != 0 {
		t.Fatalf("recover on a third node = %+v", got)
	}
}
