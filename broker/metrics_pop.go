package broker

import "github.com/prometheus/client_golang/prometheus"

// POP consumption's metrics, by group (package pop's Stats).
var (
	mPopInFlight = desc("samsa_broker_pop_inflight_messages", "Messages handed out by POP and not yet acknowledged, by group.",
		prometheus.GaugeValue, "group")
	mPopRedelivered = desc("samsa_broker_pop_redelivered_total", "Messages POP handed out again after their invisible time passed unacknowledged, by group.",
		prometheus.CounterValue, "group")
	mPopDeadLetters = desc("samsa_broker_pop_dead_letters_total", "Messages POP sent to the group's DLQ past its max reconsume times, by group.",
		prometheus.CounterValue, "group")
)

// collectPop emits each POP group's in-flight count, redeliveries and dead
// letters.
func (c *brokerCollector) collectPop(emit func(d metricDesc, v int64, labels ...string)) {
	if c.b.pop == nil {
		return
	}
	for _, g := range c.b.pop.Stats() {
		emit(mPopInFlight, g.InFlight, g.Group)
		emit(mPopRedelivered, g.Redelivered, g.Group)
		emit(mPopDeadLetters, g.DeadLetters, g.Group)
	}
}
