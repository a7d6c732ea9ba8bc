package resultfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteLaysOutByExperimentHostAndTime(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 2, 13, 45, 0, 0, time.FixedZone("x", 3600))
	p, err := Write(dir, "peer-nats", "my host/1", start, map[string]int{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "peer-nats", "my_host_1-20261202T124500Z.json"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]int
	if err := json.Unmarshal(b, &m); err != nil || m["a"] != 1 {
		t.Fatalf("content %q: %v", b, err)
	}
}
