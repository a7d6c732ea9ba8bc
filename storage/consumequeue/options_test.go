package consumequeue

import (
	"math"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

func TestOptions(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	if o.FS != vfs.Default || o.EntriesPerFile != DefaultEntriesPerFile || o.Logger == nil {
		t.Fatalf("defaults: %+v", o)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Fatalf("missing Dir: %v", err)
	}
	bad := Options{EntriesPerFile: -1, MaxOpenFiles: -1}
	err := bad.Validate()
	for _, want := range []string{"FS", "Dir", "EntriesPerFile", "Logger", "MaxOpenFiles"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Validate should report %s at once: %v", want, err)
		}
	}
	o.Dir = "/x/cq"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := o.String(), `consumequeue.Options{Dir: "/x/cq", EntriesPerFile: 300000, MaxOpenFiles: 1024, FS: vfs.osFS}`; got != want {
		t.Fatalf("String() = %s, want %s", got, want)
	}
	if _, err := OpenTable(Options{Dir: "/x", EntriesPerFile: MaxEntriesPerFile + 1}); err == nil {
		t.Fatal("OpenTable accepted a bad option")
	}
	tb := openTable(t, vfs.NewMem(), "/cq", 0)
	defer tb.Close()
	if tb.Options().EntriesPerFile != DefaultEntriesPerFile {
		t.Fatalf("table options %v", tb.Options())
	}
}

func TestEntryCodec(t *testing.T) {
	e := Entry{PhysOffset: math.MaxInt64 - 5, Size: math.MaxInt32, TagsCode: -42}
	var b [EntrySize]byte
	putEntry(b[:], e)
	if got := getEntry(b[:]); got != e {
		t.Fatalf("round trip %v", got)
	}
	// RocketMQ's layout: big-endian offset, size, tags.
	putEntry(b[:], Entry{PhysOffset: 0x0102030405060708, Size: 0x090a0b0c, TagsCode: 0x0d0e0f1011121314})
	for i := range EntrySize {
		if b[i] != byte(i+1) {
			t.Fatalf("byte %d = %#x", i, b[i])
		}
	}
}

func TestFileNames(t *testing.T) {
	if got := fileName(300_000); got != "00000000000006000000" {
		t.Fatalf("fileName = %s", got)
	}
	for name, want := range map[string]int64{"00000000000006000000": 300_000, "00000000000000000000": 0} {
		if got, ok := parseFileName(name); !ok || got != want {
			t.Fatalf("parse %s = %d %v", name, got, ok)
		}
	}
	for _, name := range []string{"0000000000000600000", "00000000000006000001", "0000000000000600000x", "99999999999999999999", ""} {
		if _, ok := parseFileName(name); ok {
			t.Fatalf("parse %q accepted", name)
		}
	}
	q := &Queue{topic: "T", qid: 3}
	if q.Topic() != "T" || q.QueueID() != 3 || q.String() != "T/3" {
		t.Fatal("accessors")
	}
}
