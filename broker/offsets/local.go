package offsets

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Local returns a slave's commits that its master has not taken yet.
func (t *Table) Local() map[Key]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return maps.Clone(t.mu.local)
}

// DropLocal forgets every local commit: a controller-mode replica made
// master has them in its table already.
func (t *Table) DropLocal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.mu.local) > 0 {
		clear(t.mu.local)
		t.mu.dirty = true
	}
}

// Refused is a Push's error when the master will never take the commit (a
// topic it does not have, a queue past its queues): Sync drops it, since
// keeping it would hold every later round.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return "refused by the master: " + e.Reason }

// Push hands one local commit to the master: nil when the master took it,
// a *Refused when it never will, any other error to end the round.
type Push func(k Key, offset int64) error

// Sync is a slave's round with its master, whose table is given in
// GET_ALL_CONSUMER_OFFSET's form (All on the master): each local commit
// the master is at or past is forgotten, each other one handed over with
// push, in key order; then the master's offsets are adopted (a local
// commit stays until the master has it) and the table is saved if
// anything changed. A push that fails ends the round with its error,
// nothing adopted; what is left is pushed next round. master names the
// master in the log lines.
func (t *Table) Sync(master string, table map[string]map[int32]int64, push Push) error {
	theirs := make(map[Key]int64)
	for name, qs := range table {
		topic, group, ok := strings.Cut(name, "@")
		if !ok || topic == "" || group == "" {
			continue
		}
		for q, off := range qs {
			theirs[Key{topic, group, q}] = off
		}
	}
	local := t.Local()
	pushed := 0
	for _, k := range slices.SortedFunc(maps.Keys(local), compareKeys) {
		off := local[k]
		if cur, ok := theirs[k]; ok && cur >= off {
			t.taken(k, off) // the master is there already
			continue
		}
		err := push(k, off)
		if r := (*Refused)(nil); errors.As(err, &r) {
			t.cfg.Logger.Warn("broker: the master refused an offset committed to this slave; dropped", "master", master,
				"group", k.Group, "topic", k.Topic, "queue", k.Queue, "offset", off, "reason", r.Reason)
			t.taken(k, off)
			continue
		}
		if err != nil {
			return err // the rest waits for the next round; nothing is adopted over it
		}
		theirs[k] = off
		t.taken(k, off)
		pushed++
	}
	if pushed > 0 {
		t.cfg.Logger.Info("broker: offsets committed to this slave handed to the master", "master", master, "queues", pushed)
	}
	if t.adopt(theirs) || pushed > 0 {
		if err := t.Save(false); err != nil {
			return fmt.Errorf("broker: save offsets copied from the master: %w", err)
		}
	}
	return nil
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Queue, b.Queue))
}

// taken forgets a local commit the master now has (or has passed),
// unless a newer commit replaced it meanwhile.
func (t *Table) taken(k Key, offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if off, ok := t.mu.local[k]; ok && off == offset {
		delete(t.mu.local, k)
		t.mu.dirty = true
	}
}

// adopt takes the master's offsets (RocketMQ's
// SlaveSynchronize.syncConsumerOffset: the master's entries replace the
// slave's, offsets only the slave has stay), except those committed
// locally and not yet taken by the master. It reports whether anything
// changed.
func (t *Table) adopt(master map[Key]int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for k, off := range master {
		if _, local := t.mu.local[k]; local {
			continue
		}
		if t.cfg.CheckNames(k.Topic, k.Group) != nil || k.Queue < 0 || off < 0 {
			continue // what this broker's own file could not hold
		}
		if t.setLocked(k, off) {
			changed = true
		}
	}
	t.mu.dirty = t.mu.dirty || changed
	return changed
}
