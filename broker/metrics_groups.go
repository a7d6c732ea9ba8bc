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
	if c.b.offsets == nil {
		return
	}
	for k, off := range c.b.offsets.Snapshot() {
		queue := strconv.Itoa(int(k.Queue))
		emit(mGroupOff, off, k.Group, k.Topic, queue)
		emit(mGroupLag, max(c.b.store.MaxQueueOffset(k.Topic, k.Queue)-off, 0), k.Group, k.Topic, queue)
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
