package delay

import "fmt"

// Stat is one line of the broker's text stats.
type Stat struct {
	Name  string
	Value any
}

// Stats are the delayed-delivery lines of the text stats (stats
// schedule): per delay level RocketMQ's scheduleMessageOffset_<level>
// ("delivered offset,max offset" of its schedule queue, for the levels
// that have seen a message), then the timer wheel's pending count and
// progress (with timers).
func (s *Service) Stats() []Stat {
	t := s.sched.table()
	var lines []Stat
	for l := 1; l <= len(s.levels); l++ {
		max := s.cfg.Store.MaxQueueOffset(ScheduleTopic, int32(l-1))
		if off := t.OffsetTable[l]; off > 0 || max > 0 {
			lines = append(lines, Stat{fmt.Sprintf("scheduleMessageOffset_%d", l), fmt.Sprintf("%d,%d", off, max)})
		}
	}
	if tm := s.timers; tm != nil {
		lines = append(lines,
			Stat{"timer_pending", tm.pending.Load()},
			Stat{"timer_read_ms", tm.readPub.Load()},
			Stat{"timer_enqueued_offset", tm.queuePub.Load()},
			Stat{"timer_queue_max_offset", s.cfg.Store.MaxQueueOffset(TimerTopic, 0)})
	}
	return lines
}
