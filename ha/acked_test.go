package ha

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestAckedMark: the mark starts at 0, only rises with Raise and only
// falls with Lower, survives a reopen, and a damaged file is refused.
func TestAckedMark(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/ha"); err != nil {
		t.Fatal(err)
	}
	m, err := OpenAckedMark(fsys, "/ha/acked")
	if err != nil || m.Value() != 0 {
		t.Fatalf("new mark: %v, %v", m, err)
	}
	for _, step := range []struct {
		raise bool
		v     int64
		want  int64
	}{{true, 100, 100}, {true, 50, 100}, {false, 200, 100}, {false, 60, 60}, {true, 70, 70}} {
		if step.raise {
			err = m.Raise(step.v)
		} else {
			err = m.Lower(step.v)
		}
		if err != nil || m.Value() != step.want {
			t.Fatalf("raise=%v %d: mark %d (%v), want %d", step.raise, step.v, m.Value(), err, step.want)
		}
	}
	if m2, err := OpenAckedMark(fsys, "/ha/acked"); err != nil || m2.Value() != 70 {
		t.Fatalf("reopened: %v, %v", m2, err)
	}
	f, err := fsys.Open("/ha/acked", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteAt([]byte{9}, 12)
	_ = f.Close()
	if _, err := OpenAckedMark(fsys, "/ha/acked"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged mark opened: %v", err)
	}
}

// TestSlaveCutAccountsAcknowledged: a cut below the mark is logged at
// Error and reported as acknowledged bytes, and lowers the mark; one
// above it reports none.
func TestSlaveCutAccountsAcknowledged(t *testing.T) {
	fsys := vfs.NewMem()
	m, _ := OpenAckedMark(fsys, "/acked")
	if err := m.Raise(1000); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var got [][3]int64
	s := &Slave{lg: slog.New(slog.NewTextHandler(&logs, nil)),
		cfg: SlaveConfig{Acked: m, OnCut: func(from, to, acked int64) { got = append(got, [3]int64{from, to, acked}) }}}
	if err := s.cut(1200, 1500); err != nil {
		t.Fatal(err)
	}
	if err := s.cut(900, 1200); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != [3]int64{1200, 1500, 0} || got[1] != [3]int64{900, 1200, 100} {
		t.Fatalf("cuts reported %v", got)
	}
	if m.Value() != 900 || strings.Count(logs.String(), "level=ERROR") != 1 {
		t.Fatalf("mark %d after the cuts; log:\n%s", m.Value(), logs.String())
	}
}
