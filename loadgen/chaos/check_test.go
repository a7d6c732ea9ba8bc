package chaos

import (
	"net/netip"
	"testing"
	"time"

	"github.com/samsamq/samsa/loadgen/killloop"
)

func TestOutOfOrder(t *testing.T) {
	found := map[killloop.Pos]string{
		{Queue: 0, Offset: 0}: "p1-1", {Queue: 0, Offset: 1}: "p2-1", {Queue: 0, Offset: 2}: "p1-3",
		{Queue: 0, Offset: 3}: "p1-2",                                // after p1-3: out of order
		{Queue: 0, Offset: 4}: "p1-1",                                // a duplicate: not judged again
		{Queue: 1, Offset: 0}: "p1-9", {Queue: 1, Offset: 1}: "p1-4", // another queue keeps its own order: out of order
		{Queue: 1, Offset: 2}: "junk",
	}
	o := OutOfOrder(found)
	if o.OutOfOrder != 2 || o.Unparsed != 1 || len(o.Sample) != 2 {
		t.Fatalf("%+v", o)
	}
	if o.Sample[0] != "q0@3: p1-2 after p1-3" {
		t.Fatalf("sample %q", o.Sample[0])
	}
	if o := OutOfOrder(map[killloop.Pos]string{{Queue: 0, Offset: 0}: "p1-1", {Queue: 0, Offset: 1}: "p1-2"}); o.OutOfOrder != 0 {
		t.Fatalf("in order: %+v", o)
	}
}

func TestTwoMasters(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := []RoleSample{
		{Broker: "a", Master: true, Epoch: 1, At: t0},
		{Broker: "b", Master: false, Epoch: 1, At: t0},
		{Broker: "b", Master: true, Epoch: 2, At: t0.Add(time.Second)},
		{Broker: "a", Master: true, Epoch: 1, At: t0.Add(2 * time.Second)}, // the old master, fenced later: allowed
		{Broker: "c", Master: true, Epoch: 2, At: t0.Add(3 * time.Second)}, // split brain
		{Broker: "b", Master: true, Epoch: 2, At: t0.Add(4 * time.Second)},
	}
	got := TwoMasters(s)
	if len(got) != 1 || got[0].Epoch != 2 || got[0].Brokers != [2]string{"b", "c"} {
		t.Fatalf("%+v", got)
	}
}

func TestRecoveryAndGaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	acks := []Ack{{at(0), "m"}, {at(10), "m"}, {at(20), "m"}, {at(1500), "m"}, {at(2000), "s1"}, {at(2100), "s1"}}
	if d, ok := RecoveredAfter(acks, at(15), "m"); !ok || d != 1985*time.Millisecond {
		t.Fatalf("recovered after %v %v", d, ok)
	}
	if _, ok := RecoveredAfter(acks, at(2200), "m"); ok {
		t.Fatal("recovered with no ack after the fault")
	}
	if g, from := LongestGap(acks, at(5), at(2100)); g != 1480*time.Millisecond || !from.Equal(at(20)) {
		t.Fatalf("gap %v from %v", g, from.Sub(t0))
	}
	if g, from := LongestGap(acks, at(2100), at(3000)); g != 900*time.Millisecond || !from.Equal(at(2100)) {
		t.Fatalf("trailing gap %v from %v", g, from.Sub(t0))
	}
	if g, from := LongestGap(acks, at(2200), at(2300)); g != 100*time.Millisecond || !from.Equal(at(2200)) {
		t.Fatalf("gap with no acknowledgement %v from %v", g, from.Sub(t0))
	}
}

// TestAcksSinceMark: a cycle reads only the acknowledgements recorded
// since its mark, in time order, and recovery is judged on them alone.
func TestAcksSinceMark(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ld := &load{}
	m := netip.MustParseAddrPort("127.0.0.1:10911")
	s1 := netip.MustParseAddrPort("127.0.0.1:10921")
	ld.record(at(0), m, true)
	ld.record(at(10), m, true)
	mark := ld.mark()
	// Two producers record out of order: the later-recorded one is older.
	ld.record(at(2000), s1, true)
	ld.record(at(1990), netip.AddrPort{}, false) // an offset message id that did not parse
	ld.record(at(2100), m, true)
	got := ld.acksSince(mark)
	if len(got) != 3 || !got[0].At.Equal(at(1990)) || !got[2].At.Equal(at(2100)) {
		t.Fatalf("acks since the mark: %v", got)
	}
	if got[0].Broker != "?" || got[1].Broker != s1.String() || got[2].Broker != m.String() {
		t.Fatalf("brokers %q %q %q", got[0].Broker, got[1].Broker, got[2].Broker)
	}
	if d, ok := RecoveredAfter(got, at(15), m.String()); !ok || d != 1975*time.Millisecond {
		t.Fatalf("recovered after %v %v", d, ok)
	}
	if n := len(ld.acksCopy()); n != 5 {
		t.Fatalf("acksCopy has %d, want all 5", n)
	}
}
