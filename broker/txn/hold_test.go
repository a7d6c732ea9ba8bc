package txn

import (
	"bytes"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
)

// TestHold: a half Config.Hold holds is neither checked back nor
// discarded however many rounds pass, while one it does not hold, older
// or younger, goes the usual way; the held one is then committed with
// End, and Property reads its properties.
func TestHold(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.Hold = func(props []byte) bool {
			v, ok := record.LookupProperty(props, "OWNER")
			return ok && string(v) == "xa"
		}
	})
	r.setProducer("p1", "pg", false, true)
	held := r.prepare("t", 0, "held", map[string]string{PropTranPrepared: "true", PropProducerGroup: "pg", "OWNER": "xa"})
	free := r.prepare("t", 0, "free", map[string]string{PropTranPrepared: "true", PropProducerGroup: "pg"})
	for range 6 { // past the timeout, and past CheckMax (3) check-backs
		r.clock.Add(11 * time.Second)
		r.svc.round(nil)
	}
	checked := map[string]int{}
	for _, s := range r.takeSent() {
		checked[s.cmd.ExtFields["tranStateTableOffset"]]++
	}
	if checked["0"] != 0 || checked["1"] == 0 {
		t.Fatalf("check-backs by half offset: %v; want none of the held half 0, some of half 1", checked)
	}
	if st := r.svc.state().state(held.QueueOffset); st != txnOpen {
		t.Fatalf("the held half is in state %d, want open", st)
	}
	if st := r.svc.state().state(free.QueueOffset); st == txnOpen {
		t.Fatal("the half not held is still open after its check-backs")
	}
	ref := Ref{HalfOffset: held.QueueOffset, CommitLogOffset: held.PhysOffset}
	if v, ok, err := r.svc.Property(ref, "OWNER"); err != nil || !ok || v != "xa" {
		t.Fatalf("Property = %q %v %v", v, ok, err)
	}
	if _, err := r.svc.End("pg", Commit, []Ref{ref}); err != nil {
		t.Fatal(err)
	}
	r.waitDispatched()
	recs := r.read("t", 0, 0)
	if len(recs) != 1 || !bytes.Equal(recs[0].Body, []byte("held")) {
		t.Fatalf("after the commit the queue holds %d records", len(recs))
	}
}
