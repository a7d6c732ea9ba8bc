package broker

import (
	"fmt"
	"sort"
)

// scheduleStats are the delayed-delivery lines of the text stats (stats
// schedule): per delay level RocketMQ's scheduleMessageOffset_<level>
// ("delivered offset,max offset" of its schedule queue), then the timer
// wheel's pending count and progress (on a master that has timers).
func (b *Broker) scheduleStats() []statLine {
	t := b.sched.table()
	levels := make([]int, 0, len(b.sched.levels))
	for l := range b.sched.levels {
		levels = append(levels, l+1)
	}
	sort.Ints(levels)
	var lines []statLine
	for _, l := range levels {
		max := b.store.MaxQueueOffset(ScheduleTopic, int32(l-1))
		if off := t.OffsetTable[l]; off > 0 || max > 0 {
			lines = append(lines, statLine{fmt.Sprintf("scheduleMessageOffset_%d", l), fmt.Sprintf("%d,%d", off, max)})
		}
	}
	if b.timers != nil {
		lines = append(lines,
			statLine{"timer_pending", b.timers.pending.Load()},
			statLine{"timer_read_ms", b.timers.readPub.Load()},
			statLine{"timer_enqueued_offset", b.timers.queuePub.Load()},
			statLine{"timer_queue_max_offset", b.store.MaxQueueOffset(TimerTopic, 0)})
	}
	return lines
}
