package broker

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// delayLedger sends delayed messages to queue 0 of a topic and checks
// what arrives: every one, none before its time.
type delayLedger struct {
	t     *testing.T
	c     *rawClient
	topic string
	due   map[string]int64 // body → earliest allowed store time
}

func newDelayLedger(t *testing.T, addr, topic string) *delayLedger {
	c := dialRaw(t, addr)
	if r := c.call(createTopicReq(topic, 1)); r.Code != protocol.Success {
		t.Fatal(r)
	}
	return &delayLedger{t: t, c: c, topic: topic, due: map[string]int64{}}
}

func (l *delayLedger) send(body string, p map[string]string, delay time.Duration) {
	t0 := time.Now().UnixMilli()
	if r := l.c.call(sendReq(l.topic, 0, []byte(body), p)); r.Code != protocol.Success {
		l.t.Fatal(r)
	}
	l.due[body] = t0 + delay.Milliseconds()
}

// awaitAll waits until addr's topic holds every body sent, then checks
// none came early; it returns each body's count.
func (l *delayLedger) awaitAll(addr string) map[string]int {
	var recs []record.Record
	waitFor(l.t, func() bool {
		recs = pullAllRecords(l.t, addr, l.topic)
		got := map[string]bool{}
		for _, r := range recs {
			got[string(r.Body)] = true
		}
		return len(got) == len(l.due)
	}, fmt.Sprintf("all %d delivered", len(l.due)))
	time.Sleep(500 * time.Millisecond) // duplicates, if any, arrive too
	count := map[string]int{}
	for _, r := range pullAllRecords(l.t, addr, l.topic) {
		b := string(r.Body)
		count[b]++
		if r.StoreTimestamp < l.due[b] {
			l.t.Errorf("%s delivered %d ms early", b, l.due[b]-r.StoreTimestamp)
		}
	}
	return count
}

// TestDelayAndTimerSurviveKill: delay-level and timer messages, some
// delivered and some pending, survive a kill -9 of the broker: after the
// restart every one arrives, none before its time; what was delivered
// just before the kill may arrive twice (at least once), and is counted.
func TestDelayAndTimerSurviveKill(t *testing.T) {
	dir := t.TempDir()
	props := "SAMSA_BROKER_PROPS=messageDelayLevel=300ms 2s;flushDelayOffsetInterval=200;timerFlushIntervalMs=200"
	child := startChildBroker(t, dir, props)
	l := newDelayLedger(t, child.addr, "ck")
	for i := 0; i < 10; i++ {
		l.send(fmt.Sprintf("d1-%d", i), map[string]string{"DELAY": "1"}, 300*time.Millisecond)
		l.send(fmt.Sprintf("t1-%d", i), map[string]string{"TIMER_DELAY_MS": "300"}, 300*time.Millisecond)
	}
	waitFor(t, func() bool { return len(pullAllRecords(t, child.addr, "ck")) >= 20 }, "the first 20 delivered")
	time.Sleep(500 * time.Millisecond) // let a save or two pass
	for i := 0; i < 10; i++ {
		l.send(fmt.Sprintf("d2-%d", i), map[string]string{"DELAY": "2"}, 2*time.Second)
		l.send(fmt.Sprintf("t2-%d", i), map[string]string{"TIMER_DELAY_MS": strconv.Itoa(1500 + 50*i)}, time.Duration(1500+50*i)*time.Millisecond)
	}
	time.Sleep(700 * time.Millisecond)
	child.cmd.Process.Signal(syscall.SIGKILL)
	child.cmd.Wait()

	child = startChildBroker(t, dir, props)
	defer func() {
		child.cmd.Process.Signal(syscall.SIGTERM)
		child.cmd.Wait()
	}()
	count := l.awaitAll(child.addr)
	dups := 0
	for _, n := range count {
		dups += n - 1
	}
	t.Logf("%d messages, %d delivered twice after kill -9 (at least once)", len(count), dups)
}

// pullAllRecords pulls queue 0 of topic from offset 0.
func pullAllRecords(t *testing.T, addr, topic string) []record.Record {
	t.Helper()
	c := dialRaw(t, addr)
	var out []record.Record
	for off := int64(0); ; {
		r := c.call(pullReq("checker", topic, 0, off, 256, 0, "*"))
		if r.Code != protocol.Success {
			return out
		}
		recs := decodeRecords(t, r.Body)
		out = append(out, recs...)
		off += int64(len(recs))
	}
}

// TestDelayAndTimersAfterMasterChange: a slave copies the schedule and
// timer topics (replication), the delay offsets and the timer checkpoint
// (metadata sync); started as master on its store, it delivers the
// pending delayed and timer messages, none early, and does not deliver
// again what the old master delivered before the last sync.
func TestDelayAndTimersAfterMasterChange(t *testing.T) {
	dev := startReplicated(t, AsyncMaster, func(c *Config) { c.MessageDelayLevel = shortLevels })
	master, slave := dev.Broker, dev.Slaves[0]
	l := newDelayLedger(t, master.Addr(), "fo")
	for i := 0; i < 5; i++ {
		l.send(fmt.Sprintf("d1-%d", i), map[string]string{"DELAY": "1"}, 300*time.Millisecond)
		l.send(fmt.Sprintf("t1-%d", i), map[string]string{"TIMER_DELAY_MS": "200"}, 200*time.Millisecond)
	}
	sent := time.Now().UnixMilli()
	waitFor(t, func() bool { return master.store.MaxQueueOffset("fo", 0) == 10 }, "the first 10 delivered")
	waitFor(t, func() bool { // the slave copies the timer loop's progress: past the t1 slots
		return int64(binary.BigEndian.Uint64(master.delay.TimerCheckpoint())) > sent+200
	}, "the timer loop to read past the first timers' slots")
	for i := 0; i < 5; i++ {
		l.send(fmt.Sprintf("d4-%d", i), map[string]string{"DELAY": "4"}, 1200*time.Millisecond)
		l.send(fmt.Sprintf("t3-%d", i), map[string]string{"TIMER_DELAY_MS": "3000"}, 3*time.Second)
	}
	waitFor(t, func() bool {
		return slave.store.MaxQueueOffset(TimerTopic, 0) == 10 && slave.store.MaxQueueOffset(ScheduleTopic, 3) == 5
	}, "the slave to hold every delayed message")
	if err := slave.repl.meta.round(); err != nil {
		t.Fatal(err)
	}
	scfg := slave.Config()
	master.Close()
	slave.Close()
	scfg.BrokerRole, scfg.BrokerID, scfg.NamesrvAddrs = AsyncMaster, 0, nil
	_ = scfg.Set("haListenPort", "0")
	promoted, err := New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := promoted.Start(); err != nil {
		t.Fatal(err)
	}
	defer promoted.Close()
	dups := 0
	for b, n := range l.awaitAll(promoted.Addr()) {
		if n > 1 && (b[:2] == "d1" || b[:2] == "t1") {
			t.Errorf("%s, delivered before the last sync, delivered %d times", b, n)
		}
		dups += n - 1
	}
	t.Logf("%d messages, %d delivered twice after the master change", len(l.due), dups)
}
