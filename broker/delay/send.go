package delay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// Delayed delivery's message properties (RocketMQ's MessageConst).
const (
	// PropDelay is the delay level a message asks for (1 first).
	PropDelay = "DELAY"
	// PropRealTopic and PropRealQueueID keep where a message goes when
	// it is due (a transaction's half message uses them too).
	PropRealTopic   = "REAL_TOPIC"
	PropRealQueueID = "REAL_QID"

	propTimerDeliverMs = "TIMER_DELIVER_MS"
	propTimerDelaySec  = "TIMER_DELAY_SEC"
	propTimerDelayMs   = "TIMER_DELAY_MS"
	propTimerOutMs     = "TIMER_OUT_MS"
	propTimerEnqueueMs = "TIMER_ENQUEUE_MS"
	propTimerDequeueMs = "TIMER_DEQUEUE_MS"
)

// dlqPrefix starts a dead-letter topic's name (RocketMQ's
// MixAll.DLQ_GROUP_TOPIC_PREFIX, the broker's DLQGroupPrefix).
const dlqPrefix = "%DLQ%"

// ErrTimersOff refuses a timer message while timers are off
// (timerWheelEnable=false); RocketMQ answers SYSTEM_ERROR with this text.
var ErrTimersOff = errors.New("accurate timer message is not enabled, timerWheelEnable is false")

// Defer turns a message about to be stored into a delayed one when its
// properties ask (RocketMQ's HookUtils.handleScheduleMessage): a DELAY
// level above 0 goes to ScheduleTopic queue level-1 (a level above the
// table's last is the last); else TIMER_DELAY_SEC, TIMER_DELAY_MS or
// TIMER_DELIVER_MS in the future goes to TimerTopic with TIMER_OUT_MS.
// Either way REAL_TOPIC and REAL_QID keep where it goes when due. Prepared
// and rolled-back transaction messages are left alone, as are messages to
// a dead-letter topic. It changes m in place. An error refuses the send:
// ErrTimersOff, or any other for a message that is illegal
// (MESSAGE_ILLEGAL, the error's text the remark). Safe for concurrent
// use: every send comes through here.
func (s *Service) Defer(m *storage.Message) error {
	if t := record.TransactionType(m.SysFlag); t == record.TransactionPrepared || t == record.TransactionRollback {
		return nil
	}
	if len(m.Properties) == 0 {
		return nil
	}
	// One pass over the properties.
	level, sec, ms, at := 0, false, false, false
	record.ForEachProperty(m.Properties, func(k, v []byte) bool {
		switch string(k) {
		case PropDelay:
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
	if (level <= 0 && !isTimer) || m.Topic == ScheduleTopic || m.Topic == TimerTopic || strings.HasPrefix(m.Topic, dlqPrefix) {
		return nil
	}
	props := record.ParseProperties(m.Properties)
	if level > 0 {
		// A delay level wins over timer properties, which are dropped
		// (RocketMQ's checkIfTimerMessage).
		delete(props, propTimerDelaySec)
		delete(props, propTimerDelayMs)
		delete(props, propTimerDeliverMs)
		level = min(level, len(s.levels))
		props[PropDelay] = strconv.Itoa(level)
		return redirect(m, props, ScheduleTopic, int32(level-1))
	}
	if s.timers == nil {
		return ErrTimersOff
	}
	now := s.cfg.Now().UnixMilli()
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
		return errors.New("bad timer property: " + err.Error())
	}
	if deliver <= now {
		return nil // due already: stored as it is (RocketMQ's transformTimerMessage)
	}
	if max := int64(s.cfg.TimerMaxDelaySec) * 1000; deliver-now > max {
		return fmt.Errorf("timer message illegal, the delay time should not be bigger than the max delay %dms (asked %d ms ahead)",
			max, deliver-now)
	}
	// TIMER_OUT_MS is the exact time (RocketMQ rounds it down to its
	// precision and delivers at the end of that slot): the wheel reads a
	// slot at its start and delivers each timer at its own time.
	props[propTimerOutMs] = strconv.FormatInt(deliver, 10)
	return redirect(m, props, TimerTopic, 0)
}

// redirect stores m under a system topic with its real topic and queue
// in properties.
func redirect(m *storage.Message, props map[string]string, topic string, queue int32) error {
	props[PropRealTopic] = m.Topic
	props[PropRealQueueID] = strconv.Itoa(int(m.QueueID))
	enc, err := record.EncodeProperties(props)
	if err != nil {
		return errors.New("properties: " + err.Error())
	}
	m.Properties = enc
	m.Topic, m.QueueID = topic, queue
	return nil
}

// dueMessage is the copy of a delayed record that goes to its real topic
// (RocketMQ's messageTimeUp / convertMessage): same body, flag, sysflag,
// hosts, born time and reconsume count. A delay level's (keepReal) loses
// DELAY and the timer properties and keeps REAL_TOPIC and REAL_QID; a
// timer's keeps its timer properties and loses REAL_TOPIC and REAL_QID.
func dueMessage(rec *record.Record, keepReal bool) (*storage.Message, bool) {
	props := record.ParseProperties(rec.UserProperties())
	topic := props[PropRealTopic]
	qid, err := strconv.Atoi(props[PropRealQueueID])
	if topic == "" || err != nil || qid < 0 {
		return nil, false
	}
	if keepReal {
		delete(props, PropDelay)
		delete(props, propTimerDeliverMs)
		delete(props, propTimerDelaySec)
		delete(props, propTimerDelayMs)
	} else {
		delete(props, PropRealTopic)
		delete(props, PropRealQueueID)
	}
	enc, err := record.EncodeProperties(props)
	if err != nil {
		return nil, false
	}
	return CopyRecord(rec, topic, int32(qid), enc), true
}

// CopyRecord is a new message with rec's body, flag, sysflag, born time,
// hosts and reconsume count, to topic/queue with props: what a due
// delayed record becomes, and what a consumer's send-back stores.
func CopyRecord(rec *record.Record, topic string, queue int32, props []byte) *storage.Message {
	return &storage.Message{
		Topic:          topic,
		QueueID:        queue,
		Flag:           rec.Flag,
		SysFlag:        rec.SysFlag &^ (record.FlagBornHostV6 | record.FlagStoreHostV6),
		Body:           rec.Body,
		Properties:     props,
		TagsCode:       record.TagsCodeOf(props),
		BornTimestamp:  rec.BornTimestamp,
		BornHost:       rec.BornHost,
		StoreHost:      rec.StoreHost,
		ReconsumeTimes: rec.ReconsumeTimes,
	}
}
