package broker

import (
	"fmt"
	"strconv"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Delayed delivery's system topics and message properties (RocketMQ's
// TopicValidator, TimerMessageStore and MessageConst).
const (
	// ScheduleTopic holds delay-level messages until due: queue level-1.
	ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
	// TimerTopic holds timer messages until the timer service has put
	// them in its wheel (queue 0).
	TimerTopic = "rmq_sys_wheel_timer"
	// scheduleQueues is the schedule topic's queue count (RocketMQ's
	// SCHEDULE_TOPIC_QUEUE_NUM): the most delay levels there can be.
	scheduleQueues = 18

	propDelay          = "DELAY"
	propRealTopic      = "REAL_TOPIC"
	propRealQueueID    = "REAL_QID"
	propTimerDeliverMs = "TIMER_DELIVER_MS"
	propTimerDelaySec  = "TIMER_DELAY_SEC"
	propTimerDelayMs   = "TIMER_DELAY_MS"
	propTimerOutMs     = "TIMER_OUT_MS"
	propTimerEnqueueMs = "TIMER_ENQUEUE_MS"
	propTimerDequeueMs = "TIMER_DEQUEUE_MS"
)

// notSendable are the system topics no client may send to (RocketMQ's
// TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET, for the ones Samsa has).
func notSendable(topic string) bool { return topic == ScheduleTopic || topic == TimerTopic }

// deferDelivery turns a message about to be stored into a delayed one
// when its properties ask (RocketMQ's HookUtils.handleScheduleMessage): a
// DELAY level above 0 goes to ScheduleTopic queue level-1 (a level above
// the table's last is the last); else TIMER_DELAY_SEC, TIMER_DELAY_MS or
// TIMER_DELIVER_MS in the future goes to TimerTopic with TIMER_OUT_MS.
// Either way REAL_TOPIC and REAL_QID keep where it goes when due. Prepared
// and rolled-back transaction messages are left alone, as are messages to
// a dead-letter topic. A non-nil answer refuses the send.
func (b *Broker) deferDelivery(req *protocol.Command, m *storage.Message) *protocol.Command {
	if t := record.TransactionType(m.SysFlag); t == record.TransactionPrepared || t == record.TransactionRollback {
		return nil
	}
	if len(m.Properties) == 0 || b.sched == nil {
		return nil
	}
	// One pass over the properties: every send comes through here.
	level, sec, ms, at := 0, false, false, false
	record.ForEachProperty(m.Properties, func(k, v []byte) bool {
		switch string(k) {
		case propDelay:
			level, _ = strconv.Atoi(string(v))
		case propTimerDelaySec:
			sec = true
		case propTimerDelayMs:
			ms = true
		case propTimerDeliverMs:
			at = true
		}
		return true
	})
	isTimer := sec || ms || at
	if (level <= 0 && !isTimer) || m.Topic == ScheduleTopic || m.Topic == TimerTopic || hasPrefix(m.Topic, DLQGroupPrefix) {
		return nil
	}
	props := record.ParseProperties(m.Properties)
	if level > 0 {
		// A delay level wins over timer properties, which are dropped
		// (RocketMQ's checkIfTimerMessage).
		delete(props, propTimerDelaySec)
		delete(props, propTimerDelayMs)
		delete(props, propTimerDeliverMs)
		level = min(level, len(b.sched.levels))
		props[propDelay] = strconv.Itoa(level)
		return b.redirect(req, m, props, ScheduleTopic, int32(level-1))
	}
	if !b.cfg.TimerWheelEnable {
		return protocol.NewResponse(req, protocol.SystemError, "accurate timer message is not enabled, timerWheelEnable is false")
	}
	now := b.cfg.Clock().UnixMilli()
	var deliver int64
	var err error
	switch {
	case sec:
		var n int64
		n, err = strconv.ParseInt(props[propTimerDelaySec], 10, 64)
		deliver = now + n*1000
	case ms:
		var n int64
		n, err = strconv.ParseInt(props[propTimerDelayMs], 10, 64)
		deliver = now + n
	default:
		deliver, err = strconv.ParseInt(props[propTimerDeliverMs], 10, 64)
	}
	if err != nil {
		return protocol.NewResponse(req, protocol.MessageIllegal, "bad timer property: "+err.Error())
	}
	if deliver <= now {
		return nil // due already: stored as it is (RocketMQ's transformTimerMessage)
	}
	if max := int64(b.cfg.TimerMaxDelaySec) * 1000; deliver-now > max {
		return protocol.NewResponse(req, protocol.MessageIllegal, fmt.Sprintf(
			"timer message illegal, the delay time should not be bigger than the max delay %dms (asked %d ms ahead)", max, deliver-now))
	}
	// TIMER_OUT_MS is the exact time (RocketMQ rounds it down to its
	// precision and delivers at the end of that slot): the wheel reads a
	// slot at its start and delivers each timer at its own time.
	props[propTimerOutMs] = strconv.FormatInt(deliver, 10)
	return b.redirect(req, m, props, TimerTopic, 0)
}

// redirect stores m under a system topic with its real topic and queue
// in properties.
func (b *Broker) redirect(req *protocol.Command, m *storage.Message, props map[string]string, topic string, queue int32) *protocol.Command {
	props[propRealTopic] = m.Topic
	props[propRealQueueID] = strconv.Itoa(int(m.QueueID))
	enc, err := record.EncodeProperties(props)
	if err != nil {
		return protocol.NewResponse(req, protocol.MessageIllegal, "properties: "+err.Error())
	}
	m.Properties = enc
	m.Topic, m.QueueID = topic, queue
	return nil
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

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
