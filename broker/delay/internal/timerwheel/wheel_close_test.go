package timerwheel

import (
	"errors"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// TestCloseReportsFileClose: the wheel's files were written, so a failed
// Close of one (its error can be a write's) is Close's error.
func TestCloseReportsFileClose(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	w, _, err := Open(opts(efs))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 10; i++ {
		add(t, w, 100*(i+1), i)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpClose, Path: "timerlog"})
	if err := w.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Close = %v, want the injected close error", err)
	}
}

// TestTrimRemoveFails: a segment Trim cannot remove stays in the log,
// open: a later Trim removes it, and Close does not meet it closed.
func TestTrimRemoveFails(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	w, _, err := Open(opts(efs))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 20; i++ {
		add(t, w, 100*(i+1), i) // segment k holds slots 100*(8k+1)..100*(8k+8)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpRemove, Path: "timerlog"})
	if n, err := w.Trim(900); !errors.Is(err, errorfs.ErrInjected) || n != 0 || w.Segments() != 3 {
		t.Fatalf("trim at 900 with a failing remove: %d %v, %d segments", n, err, w.Segments())
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close after a failed trim: %v", err)
	}

	w, _, err = Open(opts(efs))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(20); i < 40; i++ {
		add(t, w, 100*(i+1), i)
	}
	efs.AddRule(errorfs.Rule{Op: errorfs.OpRemove, Path: "timerlog"})
	if _, err := w.Trim(900); err == nil {
		t.Fatal("trim with a failing remove: no error")
	}
	if n, err := w.Trim(900); err != nil || n != 1 {
		t.Fatalf("trim again: %d %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
