package delay

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// deferred runs Defer on a message to "t" queue 3 with props.
func deferred(t *testing.T, s *Service, topic string, sysFlag int32, p map[string]string) (*storage.Message, error) {
	t.Helper()
	enc, err := record.EncodeProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	m := &storage.Message{Topic: topic, QueueID: 3, SysFlag: sysFlag, Properties: enc}
	return m, s.Defer(m)
}

// TestDefer: the send-side rewrite, RocketMQ's handleScheduleMessage.
func TestDefer(t *testing.T) {
	r := newRig(t, func(c *Config) { c.TimerMaxDelaySec = 60 })
	now := r.clock.Now().UnixMilli()
	for _, c := range []struct {
		name  string
		topic string
		flag  int32
		props map[string]string
		// want: topic, queue, and properties that must (value) or must
		// not ("-") be there
		wantTopic string
		wantQueue int32
		want      map[string]string
	}{
		{"level", "t", 0, map[string]string{"DELAY": "2", "TAGS": "a"}, ScheduleTopic, 1,
			map[string]string{"DELAY": "2", "REAL_TOPIC": "t", "REAL_QID": "3", "TAGS": "a"}},
		{"level past the table's last", "t", 0, map[string]string{"DELAY": "9"}, ScheduleTopic, 1,
			map[string]string{"DELAY": "2", "REAL_TOPIC": "t"}},
		{"a level wins over timer properties", "t", 0, map[string]string{"DELAY": "1", "TIMER_DELAY_SEC": "5"}, ScheduleTopic, 0,
			map[string]string{"DELAY": "1", "TIMER_DELAY_SEC": "-"}},
		{"level 0", "t", 0, map[string]string{"DELAY": "0"}, "t", 3, map[string]string{"REAL_TOPIC": "-"}},
		{"no properties", "t", 0, nil, "t", 3, nil},
		{"timer sec", "t", 0, map[string]string{"TIMER_DELAY_SEC": "5"}, TimerTopic, 0,
			map[string]string{"TIMER_OUT_MS": strconv.FormatInt(now+5000, 10), "REAL_TOPIC": "t", "REAL_QID": "3", "TIMER_DELAY_SEC": "5"}},
		{"timer ms", "t", 0, map[string]string{"TIMER_DELAY_MS": "1500"}, TimerTopic, 0,
			map[string]string{"TIMER_OUT_MS": strconv.FormatInt(now+1500, 10)}},
		{"timer at", "t", 0, map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(now+700, 10)}, TimerTopic, 0,
			map[string]string{"TIMER_OUT_MS": strconv.FormatInt(now+700, 10)}},
		{"timer due already", "t", 0, map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(now-1, 10)}, "t", 3,
			map[string]string{"TIMER_OUT_MS": "-", "REAL_TOPIC": "-"}},
		{"prepared transaction", "t", record.TransactionPrepared, map[string]string{"DELAY": "1"}, "t", 3, map[string]string{"REAL_TOPIC": "-"}},
		{"dead letter", "%DLQ%g", 0, map[string]string{"DELAY": "1"}, "%DLQ%g", 3, map[string]string{"REAL_TOPIC": "-"}},
		{"schedule topic", ScheduleTopic, 0, map[string]string{"DELAY": "1"}, ScheduleTopic, 3, map[string]string{"REAL_TOPIC": "-"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := deferred(t, r.svc, c.topic, c.flag, c.props)
			if err != nil {
				t.Fatal(err)
			}
			if m.Topic != c.wantTopic || m.QueueID != c.wantQueue {
				t.Fatalf("to %s/%d, want %s/%d", m.Topic, m.QueueID, c.wantTopic, c.wantQueue)
			}
			got := record.ParseProperties(m.Properties)
			for k, v := range c.want {
				if _, has := got[k]; v == "-" && has || v != "-" && got[k] != v {
					t.Errorf("%s=%q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
	for _, p := range []map[string]string{{"TIMER_DELAY_MS": "soon"}, {"TIMER_DELAY_SEC": "61"}} {
		if _, err := deferred(t, r.svc, "t", 0, p); err == nil || errors.Is(err, ErrTimersOff) {
			t.Errorf("%v: %v, want an illegal message", p, err)
		}
	}
	off := newRig(t, func(c *Config) { c.Timers = false })
	if _, err := deferred(t, off.svc, "t", 0, map[string]string{"TIMER_DELAY_SEC": "5"}); !errors.Is(err, ErrTimersOff) {
		t.Fatalf("a timer with timers off: %v", err)
	}
}

// BenchmarkDeferPlain is what every send pays for delayed delivery when
// it asks for none: one pass over five properties.
func BenchmarkDeferPlain(b *testing.B) {
	s := &Service{cfg: Config{Now: time.Now}, levels: []time.Duration{time.Second}}
	p, _ := record.EncodeProperties(map[string]string{"TAGS": "tagA", "KEYS": "key-1",
		"UNIQ_KEY": "7F0000010000ADFD0000000000000000AA", "WAIT": "true", "idx": "12"})
	m := &storage.Message{Topic: "t", Properties: p}
	b.ReportAllocs()
	for b.Loop() {
		if s.Defer(m) != nil || m.Topic != "t" {
			b.Fatal("a plain message deferred")
		}
	}
}
