package chaos

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/internal/resultfile"
)

// TestLabResult: a chaos result reads back through its kind, its section
// names the machine and the result file, and a missed safety target is
// an error with the gate off too.
func TestLabResult(t *testing.T) {
	dir := t.TempDir()
	res := &Result{Header: resultfile.Header{Experiment: "chaos", Kind: Kind, Machine: &resultfile.Machine{Hostname: "box"}},
		Config: "cycles=1", Seed: 3}
	p, err := WriteResult(filepath.Join(dir, "chaos"), res)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != filepath.Join(dir, "chaos") || !strings.HasPrefix(filepath.Base(p), "box-") {
		t.Fatalf("result file %s: want chaos/box-<start>.json", p)
	}
	back, err := LabKind().Read(p)
	if err != nil {
		t.Fatal(err)
	}
	sec := lab.Section(back.Markdown(), back.Head(), p, "")
	if !strings.Contains(sec, "Seed 3; cycles=1.") || !strings.Contains(sec, "\nMachine: box: Linux") || !strings.Contains(sec, "Result file: `"+p+"`.") {
		t.Fatalf("section:\n%s", sec)
	}
	if v := back.Verdict(); v.Err != nil {
		t.Fatalf("a clean run missed: %v", v.Err)
	}
	res.Lost = 1
	if v := res.Verdict(); v.Err == nil || !v.Always {
		t.Fatalf("a lost message: verdict %+v, want an error gate or not", v)
	}
}
