package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage"
)

// smallStore makes a store on disk with n records and closes it cleanly.
func smallStore(t *testing.T, n int) (storage.Options, []storage.AppendResult) {
	t.Helper()
	opts := storage.Options{
		Dir: t.TempDir(), SegmentSize: 4 << 10, ConsumeQueueEntries: 16,
		Flush:     storage.FlushOptions{Policy: storage.FlushSync},
		Retention: storage.RetentionOptions{MaxAge: -1, DiskRatio: -1},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	s, err := storage.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	var res []storage.AppendResult
	for i := 0; i < n; i++ {
		r, err := s.Append(context.Background(), &storage.Message{Topic: "T", QueueID: int32(i % 2), Body: bytes.Repeat([]byte("b"), 200)})
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return opts, res
}

func runStoreCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = runStore(args, &o, &e)
	return code, o.String(), e.String()
}

func TestStoreCommand(t *testing.T) {
	opts, res := smallStore(t, 30)
	if code, out, errs := runStoreCmd("verify", opts.Dir); code != 0 || !strings.Contains(out, "OK: no corruption") {
		t.Fatalf("verify of a sound store: %d\n%s%s", code, out, errs)
	}

	// A flipped byte in the first (sealed) segment: exit 1, JSON names it.
	seg := filepath.Join(opts.Dir, "commitlog", strings.Repeat("0", 20))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[res[2].PhysicalOffset+100] ^= 1
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runStoreCmd("verify", "--json", opts.Dir)
	var rep storage.VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.Corruptions == 0 || rep.Problems[0].Offset != res[2].PhysicalOffset {
		t.Fatalf("verify of a damaged store: exit %d, %v\n%s", code, err, out)
	}

	// Repair's dry run changes nothing (a sound tail: nothing to do).
	if code, out, errs := runStoreCmd("repair", "--dry-run", opts.Dir); code != 0 || !strings.Contains(out, "needs no repair") {
		t.Fatalf("repair --dry-run: %d\n%s%s", code, out, errs)
	}

	// A running store is refused with exit 2 and a clear message.
	s, err := storage.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, _, errs := runStoreCmd("verify", opts.Dir); code != 2 || !strings.Contains(errs, "stop the broker first") {
		t.Fatalf("verify of an open store: %d %s", code, errs)
	}

	// Usage errors.
	for _, args := range [][]string{nil, {"verify"}, {"frob", opts.Dir}, {"verify", "--nope", opts.Dir}} {
		if code, _, _ := runStoreCmd(args...); code != 2 {
			t.Fatalf("%q: exit %d, want 2", args, code)
		}
	}
}
