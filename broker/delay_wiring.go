package broker

import (
	"errors"
	"path/filepath"
	"strconv"

	"github.com/samsamq/samsa/broker/delay"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Delayed delivery lives in package broker/delay; this file is its wiring.

// Delayed delivery's system topics and the properties the broker reads
// too (package delay has them all).
const (
	// ScheduleTopic holds delay-level messages until due: queue level-1.
	ScheduleTopic = delay.ScheduleTopic
	// TimerTopic holds timer messages until the timer loop has put them
	// in its wheel (queue 0).
	TimerTopic = delay.TimerTopic
	// scheduleQueues is the schedule topic's queue count: the most delay
	// levels there can be.
	scheduleQueues = delay.MaxLevels

	propDelay       = delay.PropDelay
	propRealTopic   = delay.PropRealTopic
	propRealQueueID = delay.PropRealQueueID
)

// openDelay makes delayed delivery (New): the schedule and timer topics
// join the built-in topics, the service hears of every dispatch into
// them. Start runs it on a master, Close saves its progress.
func (b *Broker) openDelay() error {
	c := &b.cfg
	d, err := delay.New(delay.Config{
		Store:              b.store,
		FS:                 c.FS,
		ConfigDir:          c.ConfigDir(),
		TimerDir:           filepath.Join(c.StorePathRootDir, "timerwheel"),
		Levels:             c.MessageDelayLevel,
		SaveInterval:       c.FlushDelayOffsetInterval,
		Timers:             c.TimerWheelEnable,
		TimerMaxDelaySec:   c.TimerMaxDelaySec,
		TimerPrecisionMs:   c.TimerPrecisionMs,
		TimerFlushInterval: c.TimerFlushInterval,
		// AppendBatch writes a batch into one CommitLog segment.
		MaxBatchBytes: int(min(1<<20, c.MappedFileSizeCommitLog/4)),
		Slave:         c.BrokerRole == Slave,
		Now:           c.Clock,
		Logger:        b.log,
		Delivered:     func(topic string, bodyBytes int) { b.stats.put(topic, 1, bodyBytes) },
		FilesSetAside: &b.stats.configSetAside,
	})
	if err != nil {
		return err
	}
	b.delay = d
	b.topics.addSystem(newTopicConfig(ScheduleTopic, scheduleQueues, PermRead|PermWrite))
	if d.Timers() {
		if keep := c.FileReservedTime * 3600; keep > 0 && keep < c.TimerMaxDelaySec {
			// A timer's message stays in the CommitLog until it is due.
			b.log.Warn("broker: fileReservedTime does not outlast timerMaxDelaySec: retention may delete a timer's message before it is due",
				"fileReservedTimeHours", c.FileReservedTime, "timerMaxDelaySec", c.TimerMaxDelaySec)
		}
		b.topics.addSystem(newTopicConfig(TimerTopic, 1, PermRead|PermWrite))
	}
	b.store.OnDispatch(d.OnDispatch)
	return nil
}

// deferDelivery turns a message about to be stored into a delayed one
// when its properties ask (delay.Service.Defer); a non-nil answer refuses
// the send: SYSTEM_ERROR for a timer while timers are off, as RocketMQ,
// MESSAGE_ILLEGAL for bad delay properties.
func deferDelivery(d *delay.Service, req *protocol.Command, m *storage.Message) *protocol.Command {
	if d == nil {
		return nil
	}
	return deferAnswer(req, d.Defer(m))
}

// deferAnswer is the answer to a send that delay.Service.Defer refused
// with err (nil when it did not).
func deferAnswer(req *protocol.Command, err error) *protocol.Command {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, delay.ErrTimersOff):
		return protocol.NewResponse(req, protocol.SystemError, err.Error())
	default:
		return protocol.NewResponse(req, protocol.MessageIllegal, err.Error())
	}
}

// notSendable are the system topics no client may send to (RocketMQ's
// TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET, for the ones Samsa has).
func notSendable(topic string) bool { return topic == ScheduleTopic || topic == TimerTopic }

// answerTarget is the topic and queue a send's answer names: a delayed
// message's real ones (RocketMQ answers with the queue the client chose).
func answerTarget(m *storage.Message) (string, int32) {
	if m.Topic != ScheduleTopic && m.Topic != TimerTopic {
		return m.Topic, m.QueueID
	}
	t, _ := record.LookupProperty(m.Properties, propRealTopic)
	q, _ := record.LookupProperty(m.Properties, propRealQueueID)
	qid, err := strconv.Atoi(string(q))
	if len(t) == 0 || err != nil {
		return m.Topic, m.QueueID
	}
	return string(t), int32(qid)
}

// batchDelayed reports whether a batch's header properties ask for a
// delay level: RocketMQ refuses such a batch (MESSAGE_ILLEGAL,
// CommitLog.asyncPutMessages).
func batchDelayed(props string) bool {
	v, ok := record.LookupProperty([]byte(props), propDelay)
	if !ok {
		return false
	}
	n, _ := strconv.Atoi(string(v))
	return n > 0
}

// delayStats are the delayed-delivery lines of the text stats (stats
// schedule; delay.Service.Stats).
func delayStats(d *delay.Service) []statLine {
	var lines []statLine
	for _, s := range d.Stats() {
		lines = append(lines, statLine{s.Name, s.Value})
	}
	return lines
}
