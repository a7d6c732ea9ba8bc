package broker

import (
	"runtime/debug"
	"strconv"
	"sync"
)

// collectGroups emits each committed consumer offset and the lag behind
// it (the queue's max offset minus the committed one, never below 0), by
// group, topic and queue. The table is copied under its read lock; the
// store is asked after.
func (c *brokerCollector) collectGroups(emit func(d metricDesc, v int64, labels ...string)) {
	type row struct {
		k   offsetKey
		q   int32
		off int64
	}
	om := c.b.offsets
	if om == nil {
		return
	}
	om.mu.RLock()
	rows := make([]row, 0, len(om.mu.table))
	for k, qs := range om.mu.table {
		for q, off := range qs {
			rows = append(rows, row{k, q, off})
		}
	}
	om.mu.RUnlock()
	for _, r := range rows {
		queue := strconv.Itoa(int(r.q))
		emit(mGroupOff, r.off, r.k.group, r.k.topic, queue)
		emit(mGroupLag, max(c.b.store.MaxQueueOffset(r.k.topic, r.q)-r.off, 0), r.k.group, r.k.topic, queue)
	}
}

// buildRevision is the VCS revision the binary was built from ("unknown"
// when the build recorded none, as in tests), with "-dirty" when the tree
// had changes.
var buildRevision = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && rev != "unknown" {
		rev += "-dirty"
	}
	return rev
})
