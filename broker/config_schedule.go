package broker

import (
	"time"

	"github.com/samsamq/samsa/broker/delay"
)

// ScheduleConfig holds the delayed-delivery settings: delay levels and
// timers (package delay). It is embedded in Config, so its fields read as
// Config's; the property names are RocketMQ's MessageStoreConfig names
// unless marked ours.
type ScheduleConfig struct {
	// MessageDelayLevel (messageDelayLevel): the delay of each level, 1
	// first, space-separated numbers with a unit s, m, h or d. Default
	// DefaultMessageDelayLevel (18 levels). Tests give short tables.
	MessageDelayLevel string
	// FlushDelayOffsetInterval (flushDelayOffsetInterval, ms): how often
	// each level's delivered offset is saved to delayOffset.json (after the
	// delivered copies are flushed). Default 10 s. A crash redelivers what
	// was delivered since the last save.
	FlushDelayOffsetInterval time.Duration
	// TimerWheelEnable (timerWheelEnable): accept timer messages
	// (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS). Default true;
	// false refuses them with SYSTEM_ERROR, as RocketMQ.
	TimerWheelEnable bool
	// TimerMaxDelaySec (timerMaxDelaySec): the furthest a timer may
	// point ahead; beyond it a send gets MESSAGE_ILLEGAL. Default 3 days.
	TimerMaxDelaySec int
	// TimerPrecisionMs (timerPrecisionMs): the width of one wheel slot;
	// a timer is delivered once its slot has passed, so at most this late
	// plus the scan (never early). Default 100 (RocketMQ's is 1000).
	TimerPrecisionMs int
	// TimerFlushInterval (timerFlushIntervalMs, ms): how often the timer
	// log and wheel are flushed and the timer checkpoint written. Default
	// 1 s. A crash redelivers timers delivered since.
	TimerFlushInterval time.Duration
}

// DefaultMessageDelayLevel is RocketMQ's messageDelayLevel default.
const DefaultMessageDelayLevel = delay.DefaultLevels

// scheduleProps are the broker.conf keys of ScheduleConfig.
var scheduleProps = []property{
	strProp("messageDelayLevel", func(c *Config) *string { return &c.MessageDelayLevel }),
	msProp("flushDelayOffsetInterval", func(c *Config) *time.Duration { return &c.FlushDelayOffsetInterval }),
	boolProp("timerWheelEnable", func(c *Config) *bool { return &c.TimerWheelEnable }),
	intProp("timerMaxDelaySec", func(c *Config) *int { return &c.TimerMaxDelaySec }),
	intProp("timerPrecisionMs", func(c *Config) *int { return &c.TimerPrecisionMs }),
	msProp("timerFlushIntervalMs", func(c *Config) *time.Duration { return &c.TimerFlushInterval }),
}

// ensureScheduleDefaults fills the delayed-delivery settings.
func (c *Config) ensureScheduleDefaults() {
	if c.MessageDelayLevel == "" {
		c.MessageDelayLevel = DefaultMessageDelayLevel
	}
	setDur(&c.FlushDelayOffsetInterval, 10*time.Second)
	c.boolDefault("timerWheelEnable", &c.TimerWheelEnable, true)
	setInt(&c.TimerMaxDelaySec, 3*24*3600)
	setInt(&c.TimerPrecisionMs, 100)
	setDur(&c.TimerFlushInterval, time.Second)
}

// validateSchedule checks the delayed-delivery settings.
func (c *Config) validateSchedule(bad func(format string, a ...any)) {
	if _, err := delay.ParseLevels(c.MessageDelayLevel); err != nil {
		bad("messageDelayLevel: %v", err)
	}
	if c.FlushDelayOffsetInterval <= 0 {
		bad("flushDelayOffsetInterval %v must be positive", c.FlushDelayOffsetInterval)
	}
	if c.TimerMaxDelaySec < 1 || c.TimerMaxDelaySec > 30*24*3600 {
		bad("timerMaxDelaySec %d out of [1, 30 days]", c.TimerMaxDelaySec)
	}
	if c.TimerPrecisionMs < 10 || c.TimerPrecisionMs > 60_000 {
		bad("timerPrecisionMs %d out of [10, 60000]", c.TimerPrecisionMs)
	}
	if c.TimerFlushInterval <= 0 {
		bad("timerFlushIntervalMs %v must be positive", c.TimerFlushInterval)
	}
}
