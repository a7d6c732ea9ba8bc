package jsonfile

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A saved file survives a power loss whole, and reads back as saved.
func TestSaveSurvivesPowerLoss(t *testing.T) {
	fs := vfs.NewMem()
	f := File{FS: fs, Path: "/c/config/t.json"}
	if err := f.Save(map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	f.FS = fs.CrashClone(nil)
	b, found, err := f.Read()
	if err != nil || !found || string(b) != "{\n  \"a\": 1\n}" {
		t.Fatalf("after a power loss: %q %v %v", b, found, err)
	}
}

// A file that does not decode is set aside and counted; bare integer keys
// decode.
func TestLoadTolerant(t *testing.T) {
	fs := vfs.NewMem()
	var n atomic.Int64
	rep := &Report{Log: quiet(), Now: func() time.Time { return time.UnixMilli(0) }, SetAside: &n}
	f := File{FS: fs, Path: "/c/t.json", Report: rep}
	if err := fs.MkdirAll("/c"); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fs, f.Path, []byte(`{1:5, 2 :7}`)); err != nil {
		t.Fatal(err)
	}
	var m map[int]int
	if _, found := f.LoadTolerant(func(b []byte) error { return json.Unmarshal(b, &m) }); !found || m[1] != 5 || m[2] != 7 {
		t.Fatalf("bare keys: found %v, %v", found, m)
	}
	if err := vfs.WriteFileAtomic(fs, f.Path, []byte(`{nope`)); err != nil {
		t.Fatal(err)
	}
	if _, found := f.LoadTolerant(func(b []byte) error { return json.Unmarshal(b, &m) }); found || n.Load() != 1 {
		t.Fatalf("garbage: found %v, set aside %d", found, n.Load())
	}
	names, err := fs.List("/c")
	if err != nil || len(names) != 1 || !strings.HasPrefix(names[0], "t.json.bad-19700101T000000.000Z") {
		t.Fatalf("config dir holds %v (%v)", names, err)
	}
}
