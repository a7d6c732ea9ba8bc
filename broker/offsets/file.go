package offsets

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// file is consumerOffset.json in RocketMQ's layout (the package doc's
// "File").
type file struct {
	OffsetTable map[string]map[string]int64 `json:"offsetTable"`
	// LocalTable (ours, a slave's only) holds the commits made on the
	// slave that its master has not taken yet, so they survive a restart
	// of the slave.
	LocalTable map[string]map[string]int64 `json:"slaveLocalOffsetTable,omitempty"`
}

// rawFile is file with each entry left raw, so that one bad entry is
// dropped rather than the whole file.
type rawFile struct {
	OffsetTable map[string]json.RawMessage `json:"offsetTable"`
	LocalTable  map[string]json.RawMessage `json:"slaveLocalOffsetTable"`
}

// load reads the file. It does not fail: a file that does not load is set
// aside, bad entries are dropped and the original kept (jsonfile).
func (t *Table) load() {
	var f rawFile
	raw, found := t.file.LoadTolerant(func(b []byte) error { return json.Unmarshal(b, &f) })
	if !found {
		return
	}
	t.mu.Lock()
	bad := t.parse(f.OffsetTable, func(k Key, off int64) { t.setLocked(k, off) })
	if t.mu.local != nil { // a master has no use for a slave's leftovers: they are in its table
		bad = append(bad, t.parse(f.LocalTable, func(k Key, off int64) { t.mu.local[k] = off })...)
	}
	t.mu.Unlock()
	if len(bad) > 0 {
		t.file.DropBad(raw, bad, func() error { return t.Save(true) }) // dirty stays set on failure
	}
}

// parse reads the file's "topic@group" → queue → offset form, handing
// each good offset to fn; it returns the bad entries, each with its
// reason.
func (t *Table) parse(in map[string]json.RawMessage, fn func(k Key, off int64)) (bad []string) {
	for _, k := range slices.Sorted(maps.Keys(in)) {
		topic, group, ok := strings.Cut(k, "@")
		if !ok {
			bad = append(bad, fmt.Sprintf("%q: not topic@group", k))
			continue
		}
		if err := t.cfg.CheckNames(topic, group); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", k, err))
			continue
		}
		var qs map[string]int64
		if err := json.Unmarshal(in[k], &qs); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", k, err))
			continue
		}
		for _, q := range slices.Sorted(maps.Keys(qs)) { // bad entries are reported in a stable order
			off := qs[q]
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil || id < 0 || off < 0 {
				bad = append(bad, fmt.Sprintf("%q: queue %q offset %d", k, q, off))
				continue
			}
			fn(Key{topic, group, int32(id)}, off)
		}
	}
	return bad
}

// Save writes consumerOffset.json if anything changed since the last save,
// or always when force. The file is replaced atomically: a failed save
// (a full disk) leaves the last one in place, and the next save tries
// again.
func (t *Table) Save(force bool) error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	t.mu.Lock()
	if !t.mu.dirty && !force {
		t.mu.Unlock()
		return nil
	}
	f := file{OffsetTable: make(map[string]map[string]int64, len(t.mu.table))}
	for p, qs := range t.mu.table {
		m := make(map[string]int64, len(qs))
		for q, off := range qs {
			m[strconv.Itoa(int(q))] = off
		}
		f.OffsetTable[p.topic+"@"+p.group] = m
	}
	for k, off := range t.mu.local {
		if f.LocalTable == nil {
			f.LocalTable = make(map[string]map[string]int64)
		}
		name := k.Topic + "@" + k.Group
		if f.LocalTable[name] == nil {
			f.LocalTable[name] = make(map[string]int64)
		}
		f.LocalTable[name][strconv.Itoa(int(k.Queue))] = off
	}
	t.mu.dirty = false
	t.mu.Unlock()
	if err := t.file.Save(f); err != nil {
		t.mu.Lock()
		t.mu.dirty = true
		t.mu.Unlock()
		return err
	}
	return nil
}
