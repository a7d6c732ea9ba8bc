package xa

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// coordLog is the coordinator's decision log.
type coordLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// openLog opens (creating) the log and returns the decisions not done.
func openLog(path string) (*coordLog, map[string]bool, error) {
	pending := map[string]bool{}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("xa: coordinator log: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		verb, id, ok := bytes.Cut(sc.Bytes(), []byte(" "))
		if !ok {
			continue // a torn last line: its write was never synced
		}
		if _, err := hex.DecodeString(string(id)); err != nil {
			continue
		}
		switch string(verb) {
		case "commit":
			pending[string(id)] = true
		case "done":
			delete(pending, string(id))
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("xa: coordinator log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("xa: coordinator log: %w", err)
	}
	return &coordLog{path: path, f: f}, pending, nil
}

// append writes a line, synced when sync.
func (l *coordLog) append(verb, gtridHex string, sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(verb + " " + gtridHex + "\n"); err != nil {
		return fmt.Errorf("xa: coordinator log: %w", err)
	}
	if sync {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("xa: coordinator log: sync: %w", err)
		}
	}
	return nil
}

// rewrite replaces the log with the decisions still pending.
func (l *coordLog) rewrite(pending map[string]bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	for id := range pending {
		b.WriteString("commit " + id + "\n")
	}
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("xa: coordinator log: %w", err)
	}
	t, err := os.Open(tmp)
	if err == nil {
		err = t.Sync()
		_ = t.Close() // read-only
	}
	if err != nil {
		return fmt.Errorf("xa: coordinator log: %w", err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		return fmt.Errorf("xa: coordinator log: %w", err)
	}
	if d, err := os.Open(filepath.Dir(l.path)); err == nil {
		_ = d.Sync() // best effort: the old log says the same or more
		_ = d.Close()
	}
	_ = l.f.Close() // the old file, replaced
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("xa: coordinator log: %w", err)
	}
	l.f = f
	return nil
}

func (l *coordLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
