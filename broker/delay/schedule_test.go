package delay

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// TestLevelDeliversAtDueTime: a DELAY=1 message (5 s here) is delivered
// once its store time plus 5 s has come by the clock, not a millisecond
// before, to its real topic and queue, with its fields kept, DELAY gone
// and REAL_TOPIC/REAL_QID kept; the level's offset moves past it.
func TestLevelDeliversAtDueTime(t *testing.T) {
	r := newRig(t, nil)
	stored := r.clock.Now()
	r.send("t", "later", map[string]string{"DELAY": "1", "TAGS": "tg", "KEYS": "k1"})
	r.clock.Add(5*time.Second - time.Millisecond)
	wait, head := r.svc.sched.deliverDue(1)
	if wait != time.Millisecond || !head || len(r.records("t", 0)) != 0 {
		t.Fatalf("a millisecond early: wait %v head %v, %d delivered", wait, head, len(r.records("t", 0)))
	}
	r.clock.Add(time.Millisecond)
	if wait, _ := r.svc.sched.deliverDue(1); wait != 0 {
		t.Fatalf("due: wait %v", wait)
	}
	recs := r.records("t", 0)
	if len(recs) != 1 {
		t.Fatalf("%d delivered, want 1", len(recs))
	}
	rec, p := recs[0], props(recs[0])
	if string(rec.Body) != "later" || rec.Flag != 7 || rec.ReconsumeTimes != 2 || rec.BornTimestamp != stored.UnixMilli() ||
		rec.StoreTimestamp != stored.Add(5*time.Second).UnixMilli() {
		t.Errorf("delivered %q flag %d reconsume %d born %d stored %d", rec.Body, rec.Flag, rec.ReconsumeTimes, rec.BornTimestamp, rec.StoreTimestamp)
	}
	if _, has := p["DELAY"]; has || p["TAGS"] != "tg" || p["KEYS"] != "k1" || p["REAL_TOPIC"] != "t" || p["REAL_QID"] != "0" {
		t.Errorf("delivered with %v", p)
	}
	if off := r.svc.Offsets().OffsetTable[1]; off != 1 {
		t.Errorf("level 1 offset %d, want 1", off)
	}
	// Nothing more: the loop would wait for a dispatch.
	if wait, head := r.svc.sched.deliverDue(1); wait != idleWait || head {
		t.Errorf("empty queue: wait %v head %v", wait, head)
	}
}

// TestLevelOrderAndBatches: a level's due messages go out in the order
// they were stored, several in one round, and the loop then waits for
// the first that is not due.
func TestLevelOrderAndBatches(t *testing.T) {
	r := newRig(t, nil)
	for i := range 5 {
		r.send("t", fmt.Sprint(i), map[string]string{"DELAY": "2"})
		r.clock.Add(time.Second)
	}
	r.clock.Add(7 * time.Second) // 0, 1 and 2 are due (10 s), 3 in a second
	wait, head := r.svc.sched.deliverDue(2)
	if wait != time.Second || !head {
		t.Fatalf("wait %v head %v, want 1s for the stored head", wait, head)
	}
	var got []string
	for _, rec := range r.records("t", 0) {
		got = append(got, string(rec.Body))
	}
	if strings.Join(got, ",") != "0,1,2" {
		t.Fatalf("delivered %v, want 0,1,2", got)
	}
}

// TestLevelClockSteppedBack: a deliver time further than one delay ahead
// (the clock went back) is taken as now, as RocketMQ's
// correctDeliverTimestamp: the message is not held for an hour.
func TestLevelClockSteppedBack(t *testing.T) {
	r := newRig(t, nil)
	r.send("t", "x", map[string]string{"DELAY": "1"})
	r.clock.Add(-time.Hour)
	r.svc.sched.deliverDue(1)
	if n := len(r.records("t", 0)); n != 1 {
		t.Fatalf("%d delivered after the clock stepped back, want 1", n)
	}
}

// TestLevelProgressSurvivesPowerLoss: after a power loss, what was
// delivered before the last save is not delivered again, what was
// delivered since is delivered again (at least once), and nothing is
// lost; after a clean restart nothing is delivered twice.
func TestLevelProgressSurvivesPowerLoss(t *testing.T) {
	r := newRig(t, nil)
	for i := range 3 {
		r.send("t", fmt.Sprintf("a%d", i), map[string]string{"DELAY": "1"})
	}
	r.clock.Add(5 * time.Second)
	r.svc.sched.deliverDue(1)
	if err := r.svc.sched.save(); err != nil { // the saver's round
		t.Fatal(err)
	}
	for i := range 2 {
		r.send("t", fmt.Sprintf("b%d", i), map[string]string{"DELAY": "1"})
	}
	r.clock.Add(5 * time.Second)
	r.svc.sched.deliverDue(1) // b0, b1 delivered, not saved
	r.send("t", "c0", map[string]string{"DELAY": "1"})
	r.crash()
	if off := r.svc.Offsets().OffsetTable[1]; off != 3 {
		t.Fatalf("level 1 offset %d after the power loss, want the saved 3", off)
	}
	r.svc.sched.correct()
	r.clock.Add(5 * time.Second)
	r.svc.sched.deliverDue(1)
	got := bodies(r.records("t", 0))
	for _, b := range []string{"a0", "a1", "a2"} {
		if got[b] != 1 {
			t.Errorf("%s delivered %d times, want once (saved before the power loss)", b, got[b])
		}
	}
	for _, b := range []string{"b0", "b1", "c0"} {
		if got[b] < 1 {
			t.Errorf("%s lost", b)
		}
	}
	// A clean restart saves at Close: nothing again.
	before := len(r.records("t", 0))
	r.restart()
	r.svc.sched.correct()
	r.clock.Add(time.Minute)
	r.svc.sched.deliverDue(1)
	if n := len(r.records("t", 0)); n != before {
		t.Fatalf("%d records after a clean restart, want %d", n, before)
	}
}

// TestLevelOffsetCorrected: a saved offset beyond the queue's end (the
// queue cut short by recovery) is clamped to it at Run, as RocketMQ's
// correctDelayOffset.
func TestLevelOffsetCorrected(t *testing.T) {
	r := newRig(t, nil)
	r.send("t", "x", map[string]string{"DELAY": "1"})
	r.svc.sched.adopt(Offsets{OffsetTable: map[int]int64{1: 100}})
	r.restart()
	r.svc.sched.correct()
	if off := r.svc.Offsets().OffsetTable[1]; off != 1 {
		t.Fatalf("level 1 offset %d, want the queue's end 1", off)
	}
}

// TestOffsetsFile: delayOffset.json keeps RocketMQ's
// DelayOffsetSerializeWrapper form, byte for byte as the broker always
// wrote it.
func TestOffsetsFile(t *testing.T) {
	r := newRig(t, nil)
	r.svc.sched.adopt(Offsets{OffsetTable: map[int]int64{1: 3, 2: 0}, DataVersion: &DataVersion{Timestamp: 5, Counter: 2}})
	b, _, err := offsetsFile(&r.svc.cfg).Read()
	want := "{\n  \"offsetTable\": {\n    \"1\": 3,\n    \"2\": 0\n  },\n  \"dataVersion\": {\n    \"timestamp\": 5,\n    \"counter\": 2\n  }\n}"
	if err != nil || string(b) != want {
		t.Fatalf("delayOffset.json:\n%s\nwant\n%s (%v)", b, want, err)
	}
	// The same version again is not written again.
	if err := r.fs.Remove(configDir + "/delayOffset.json"); err != nil {
		t.Fatal(err)
	}
	if err := r.svc.AdoptOffsets([]byte(`{"offsetTable":{1:9},"dataVersion":{"timestamp":5,"counter":2}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.fs.Stat(configDir + "/delayOffset.json"); err == nil {
		t.Fatal("the version held was written again")
	}
}

// TestOffsetsFileTolerant: a delayOffset.json that does not decode is set
// aside (counted), one with bad entries (a level below 1, a negative
// offset) loads the rest and keeps the original; neither keeps the
// service from starting.
func TestOffsetsFileTolerant(t *testing.T) {
	for _, c := range []struct {
		name, content string
		want          map[int]int64
		setAside      int // set aside or kept as a copy
	}{
		{"garbage", "{nope", map[int]int64{}, 1},
		{"bad entries", `{"offsetTable":{1:5,2:9,0:4,3:-2}}`, map[int]int64{1: 5, 2: 9}, 1},
		{"empty", "", map[int]int64{}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			if err := fs.MkdirAll(configDir); err != nil {
				t.Fatal(err)
			}
			if err := vfs.WriteFileAtomic(fs, configDir+"/delayOffset.json", []byte(c.content)); err != nil {
				t.Fatal(err)
			}
			var n atomic.Int64
			r := &rig{t: t, fs: fs, clock: newClock(), mut: func(cfg *Config) { cfg.FilesSetAside = &n }}
			r.now = r.clock.Now
			r.open()
			defer r.st.Close()
			got := r.svc.Offsets().OffsetTable
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("loaded %v, want %v", got, c.want)
			}
			names, _ := fs.List(configDir)
			kept := 0
			for _, name := range names {
				if strings.HasPrefix(name, "delayOffset.json.bad-") {
					kept++
				}
			}
			if n.Load() != int64(c.setAside) || kept != c.setAside {
				t.Fatalf("set aside %d, copies %d (dir %v)", n.Load(), kept, names)
			}
			if c.name == "bad entries" { // rewritten without them
				b, _, _ := jsonfile.File{FS: fs, Path: configDir + "/delayOffset.json"}.Read()
				if f, err := DecodeOffsets(b); err != nil || fmt.Sprint(f.OffsetTable) != fmt.Sprint(c.want) {
					t.Fatalf("rewritten %s (%v)", b, err)
				}
			}
		})
	}
}

// TestSlave: a slave runs nothing (Run returns at once) and saves nothing
// at Close; it keeps the master's progress as it is handed over.
func TestSlave(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Slave = true })
	r.send("t", "x", map[string]string{"DELAY": "1"})
	r.clock.Add(time.Hour)
	stop := make(chan struct{})
	r.svc.Run(stop) // returns: nothing to run on a slave
	if n := len(r.records("t", 0)); n != 0 {
		t.Fatalf("a slave delivered %d", n)
	}
	if err := r.svc.AdoptOffsets([]byte(`{"offsetTable":{"1":1},"dataVersion":{"timestamp":1,"counter":1}}`)); err != nil {
		t.Fatal(err)
	}
	r.restart()
	if off := r.svc.Offsets().OffsetTable[1]; off != 1 {
		t.Fatalf("slave's level 1 offset %d after a restart, want the master's 1", off)
	}
	if err := r.svc.AdoptOffsets([]byte(`{nope`)); err == nil {
		t.Fatal("a bad body adopted")
	}
}

// TestStats: the text stats' lines, RocketMQ's scheduleMessageOffset_<level>
// for the levels that have seen a message, then the timer lines.
func TestStats(t *testing.T) {
	r := newRig(t, nil)
	r.send("t", "x", map[string]string{"DELAY": "2"})
	var got []string
	for _, s := range r.svc.Stats() {
		got = append(got, fmt.Sprintf("%s %v", s.Name, s.Value))
	}
	want := "scheduleMessageOffset_2 0,1|timer_pending 0|timer_read_ms 0|timer_enqueued_offset 0|timer_queue_max_offset 0"
	if strings.Join(got, "|") != want {
		t.Fatalf("stats %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestOrphanSkipped: a scheduled record without
// REAL_TOPIC/REAL_QID is dropped (logged), and the level moves on.
func TestOrphanSkipped(t *testing.T) {
	r := newRig(t, nil)
	enc, _ := record.EncodeProperties(map[string]string{"DELAY": "1"})
	r.st.Append(t.Context(), newMsg(ScheduleTopic, 0, "orphan", enc))
	r.waitIndexed(ScheduleTopic, 0, 1)
	r.send("t", "x", map[string]string{"DELAY": "1"})
	r.clock.Add(5 * time.Second)
	r.svc.sched.deliverDue(1)
	if got := bodies(r.records("t", 0)); got["x"] != 1 || r.svc.Offsets().OffsetTable[1] != 2 {
		t.Fatalf("delivered %v, offset %d", got, r.svc.Offsets().OffsetTable[1])
	}
}
