package delay

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
)

// rounds runs the timer loop's rounds until it would sleep; it returns
// how long.
func (r *rig) rounds() time.Duration {
	r.t.Helper()
	for range 10_000 {
		if wait := r.svc.timers.round(nil); wait > 0 {
			return wait
		}
	}
	r.t.Fatal("the timer loop never rests")
	return 0
}

// timerSend sends a timer due at the clock's now + after.
func (r *rig) timerSend(body string, after time.Duration) int64 {
	at := r.clock.Now().Add(after).UnixMilli()
	r.send("t", body, map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(at, 10)})
	return at
}

// checkTimers checks that every record of t/0 is a timer in due,
// delivered no earlier than its time, with the timer properties a
// consumer sees; it returns the count by body.
func (r *rig) checkTimers(due map[string]int64) map[string]int {
	r.t.Helper()
	recs := r.records("t", 0)
	for _, rec := range recs {
		p := props(rec)
		at, ok := due[string(rec.Body)]
		if !ok {
			r.t.Errorf("%q delivered: not a timer sent", rec.Body)
			continue
		}
		if rec.StoreTimestamp < at {
			r.t.Errorf("%s delivered %d ms early", rec.Body, at-rec.StoreTimestamp)
		}
		if p["TIMER_OUT_MS"] != strconv.FormatInt(at, 10) || p["TIMER_DEQUEUE_MS"] == "" || p["TIMER_ENQUEUE_MS"] == "" ||
			p["REAL_TOPIC"] != "" || p["REAL_QID"] != "" {
			r.t.Errorf("%s delivered with %v", rec.Body, p)
		}
	}
	return bodies(recs)
}

// TestTimerDeliversAtItsTime: each timer is delivered at its own time by
// the clock, not a millisecond before, whatever its slot; the loop sleeps
// until the next one.
func TestTimerDeliversAtItsTime(t *testing.T) {
	r := newRig(t, nil)
	due := map[string]int64{}
	for _, c := range []struct {
		body  string
		after time.Duration
	}{{"a", 1500 * time.Millisecond}, {"b", 1000 * time.Millisecond}, {"c", 730 * time.Millisecond}, {"d", 1001 * time.Millisecond}} {
		due[c.body] = r.timerSend(c.body, c.after)
	}
	start := r.clock.Now()
	for _, step := range []struct {
		at    time.Duration
		want  string // delivered so far
		sleep time.Duration
	}{
		{0, "", 100 * time.Millisecond}, // to the end of the empty slot being read
		{729 * time.Millisecond, "", time.Millisecond},
		{730 * time.Millisecond, "c", 70 * time.Millisecond}, // to the end of c's slot
		{999 * time.Millisecond, "c", time.Millisecond},
		{1000 * time.Millisecond, "cb", time.Millisecond},
		{1001 * time.Millisecond, "cbd", 99 * time.Millisecond},
		{1500 * time.Millisecond, "cbda", 100 * time.Millisecond},
	} {
		r.clock.Add(start.Add(step.at).Sub(r.clock.Now()))
		sleep := r.rounds()
		got := ""
		for _, rec := range r.records("t", 0) {
			got += string(rec.Body)
		}
		if got != step.want || sleep != step.sleep {
			t.Fatalf("at +%v: delivered %q, sleeps %v; want %q, %v", step.at, got, sleep, step.want, step.sleep)
		}
	}
	r.checkTimers(due)
	if s := r.svc.timers.pending.Load(); s != 0 {
		t.Errorf("%d timers pending", s)
	}
}

// TestTimerHotSlot: a slot with more timers than hotSlot is streamed once
// it has passed: all arrive, none early.
func TestTimerHotSlot(t *testing.T) {
	defer func(n int) { hotSlot = n }(hotSlot)
	hotSlot = 5
	r := newRig(t, nil)
	due := map[string]int64{}
	for i := range 20 {
		due[strconv.Itoa(i)] = r.timerSend(strconv.Itoa(i), 800*time.Millisecond)
	}
	r.rounds()
	r.clock.Add(800 * time.Millisecond) // the slot's start: held back, too many
	r.rounds()
	if n := len(r.records("t", 0)); n != 0 {
		t.Fatalf("%d of a hot slot delivered before it passed", n)
	}
	r.clock.Add(100 * time.Millisecond)
	r.rounds()
	if got := r.checkTimers(due); len(got) != 20 {
		t.Fatalf("%d distinct of 20 delivered", len(got))
	}
}

// TestTimerSurvivesPowerLoss: timers delivered before the last checkpoint
// are not delivered again after a power loss, pending ones are delivered
// (none early, none lost), and a clean restart delivers nothing twice.
func TestTimerSurvivesPowerLoss(t *testing.T) {
	r := newRig(t, nil)
	due := map[string]int64{}
	for i := range 5 {
		due[fmt.Sprintf("early%d", i)] = r.timerSend(fmt.Sprintf("early%d", i), 300*time.Millisecond)
		due[fmt.Sprintf("late%d", i)] = r.timerSend(fmt.Sprintf("late%d", i), time.Duration(2000+100*i)*time.Millisecond)
	}
	r.rounds()
	r.clock.Add(400 * time.Millisecond)
	r.rounds()
	if err := r.svc.timers.checkpoint(); err != nil { // the loop's, every TimerFlushInterval
		t.Fatal(err)
	}
	due["after"] = r.timerSend("after", time.Second)
	r.rounds()
	r.crash()
	r.rounds()
	r.clock.Add(3 * time.Second)
	r.rounds()
	got := r.checkTimers(due)
	for b := range due {
		if got[b] == 0 || b[:5] == "early" && got[b] != 1 {
			t.Errorf("%s delivered %d times", b, got[b])
		}
	}
	n := len(r.records("t", 0))
	r.restart()
	r.clock.Add(time.Minute)
	r.rounds()
	if m := len(r.records("t", 0)); m != n {
		t.Fatalf("%d delivered after a clean restart, want %d", m, n)
	}
}

// TestTimerAfterMasterChange: a broker that lacks the timer files but
// holds its master's timer topic and checkpoint (GET_TIMER_CHECK_POINT)
// builds its wheel from the topic, delivers what is pending, and not what
// the old master delivered.
func TestTimerAfterMasterChange(t *testing.T) {
	r := newRig(t, nil)
	due := map[string]int64{}
	for i := range 3 {
		due[fmt.Sprintf("old%d", i)] = r.timerSend(fmt.Sprintf("old%d", i), 200*time.Millisecond)
		due[fmt.Sprintf("new%d", i)] = r.timerSend(fmt.Sprintf("new%d", i), 3*time.Second)
	}
	r.rounds()
	r.clock.Add(300 * time.Millisecond)
	r.rounds()
	body := r.svc.TimerCheckpoint()
	if n := len(r.records("t", 0)); n != 3 {
		t.Fatalf("the master delivered %d before the change, want 3", n)
	}
	// The replica: same store, its own (empty) timer directory; its
	// metadata sync kept the master's checkpoint.
	r.mut = func(c *Config) { c.TimerDir = "/s/replica-timerwheel"; c.Slave = true }
	r.restart()
	if err := r.svc.AdoptTimerCheckpoint(body); err != nil {
		t.Fatal(err)
	}
	r.mut = func(c *Config) { c.TimerDir = "/s/replica-timerwheel" } // run as master
	r.restart()
	r.rounds()
	r.clock.Add(3 * time.Second)
	r.rounds()
	for b, n := range r.checkTimers(due) {
		if n != 1 {
			t.Errorf("%s delivered %d times", b, n)
		}
	}
}

// TestTimerCheckpointBody: GET_TIMER_CHECK_POINT's body is RocketMQ's 56
// bytes, zeros before the wheel opens; a slave keeps a master's
// progress, not zeros, and refuses a short body.
func TestTimerCheckpointBody(t *testing.T) {
	r := newRig(t, nil)
	if b := r.svc.TimerCheckpoint(); len(b) != 56 || string(b) != string(make([]byte, 56)) {
		t.Fatalf("before the wheel: %x", b)
	}
	if err := r.svc.AdoptTimerCheckpoint(make([]byte, 56)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.fs.Stat(configDir + "/timerCheckpoint.json"); err == nil {
		t.Fatal("zeros kept")
	}
	if err := r.svc.AdoptTimerCheckpoint(make([]byte, 31)); err == nil {
		t.Fatal("a short body adopted")
	}
	r.timerSend("x", time.Second)
	r.rounds()
	b := r.svc.TimerCheckpoint()
	if err := r.svc.AdoptTimerCheckpoint(b); err != nil {
		t.Fatal(err)
	}
	saved, _, err := watermarkFile(&r.svc.cfg).Read()
	want := fmt.Sprintf("{\n  \"lastReadTimeMs\": %d,\n  \"masterTimerQueueOffset\": 1\n}", r.clock.Now().UnixMilli())
	if err != nil || string(saved) != want {
		t.Fatalf("timerCheckpoint.json %s, want %s (%v)", saved, want, err)
	}
}

// TestTimerOrphanDropped: a timer-topic record without REAL_TOPIC is
// dropped, the rest delivered.
func TestTimerOrphanDropped(t *testing.T) {
	r := newRig(t, nil)
	at := strconv.FormatInt(r.clock.Now().Add(time.Second).UnixMilli(), 10)
	enc, _ := record.EncodeProperties(map[string]string{"TIMER_OUT_MS": at})
	r.st.Append(t.Context(), newMsg(TimerTopic, 0, "orphan", enc))
	r.waitIndexed(TimerTopic, 0, 1)
	due := map[string]int64{"x": r.timerSend("x", time.Second)}
	r.rounds()
	r.clock.Add(time.Second)
	r.rounds()
	if got := r.checkTimers(due); got["x"] != 1 || len(got) != 1 {
		t.Fatalf("delivered %v", got)
	}
}
