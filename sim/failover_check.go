package sim

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/storage"
)

// holds reports whether st's log holds data at off, byte for byte.
func holds(st *storage.Store, off int64, data []byte) bool {
	got := make([]byte, len(data))
	n, _, err := st.ReadLog(off, got)
	return err == nil && n == len(data) && bytes.Equal(got, data)
}

// promisedLocked lists the acknowledged records the mode still promises,
// by offset.
func (f *failover) promisedLocked() []int64 {
	var offs []int64
	for off, r := range f.mu.acked {
		if !r.forfeited {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs
}

// noteAcked records the acknowledgement of data at off by master p.
func (f *failover) noteAcked(p *replica, off int64, data []byte, bodyAt int, holders map[int64]bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.mu.acked[off]; ok && !old.forfeited && !bytes.Equal(old.data, data) {
		return f.violationLocked(InvAckedKept, "%s acknowledged a record at %d, where another acknowledged record (%d bytes) stood", p.name, off, len(old.data))
	}
	// A forfeited record's offset given again drops it, and any other
	// forfeited record it overlaps.
	for o, r := range f.mu.acked {
		if r.forfeited && o < off+int64(len(data)) && o+int64(len(r.data)) > off {
			delete(f.mu.acked, o)
		}
	}
	f.mu.acked[off] = &ackedRec{data: data, bodyAt: bodyAt, holders: holders}
	return nil
}

// afterOpen sets which acknowledged records restarted replica p holds,
// before its loop starts (and with it any cut). One it held and lost
// (a power loss) is at risk until every replica holds it again.
func (f *failover) afterOpen(p *replica) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for off, r := range f.mu.acked {
		if holds(p.store, off, r.data) {
			r.holders[p.id] = true
		} else if r.holders[p.id] {
			delete(r.holders, p.id)
			if !r.forfeited && (f.o.Flush != storage.FlushSync || p.flipped) {
				r.atRisk = true
			}
		}
	}
}

// faultBegins forfeits, under async flush, the acknowledged records still
// at risk from an earlier power loss: the mode promises one power-loss
// event at a time (see the package doc).
func (f *failover) faultBegins(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, off := range f.promisedLocked() {
		if r := f.mu.acked[off]; r.atRisk {
			r.forfeited = true
			n++
		}
	}
	f.mu.forfeits += n
	if n > 0 {
		f.mu.trace = append(f.mu.trace, "          "+strconv.Itoa(n)+" acknowledged records lost to a power loss on some replica and not yet back everywhere: "+
			what+" comes first, and async flush does not promise them through it")
	}
}

// refreshHolders adds the replicas that received acknowledged records
// since (a cut or a restart is what removes one).
func (f *failover) refreshHolders() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.reps {
		if !p.up() {
			continue
		}
		for _, off := range f.promisedLocked() {
			if r := f.mu.acked[off]; !r.holders[p.id] && holds(p.store, off, r.data) {
				r.holders[p.id] = true
			}
		}
	}
	for _, r := range f.mu.acked {
		if r.atRisk && len(r.holders) == groupSize {
			r.atRisk = false
		}
	}
	return nil
}

// checkForfeits runs after crashes: an acknowledged record that no
// member of the sync-state set as it stood at the crash (set) holds any
// more was lost by power losses (a replica outside the set that kept it
// is luck, not a promise: no election chooses it). Under sync flush that
// breaks the mode's promise (every member synced it before the
// acknowledgement); under async flush the mode does not promise it (each
// had it in its kernel only), and it is checked no more.
func (f *failover) checkForfeits(what string, set []int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	lost := 0
	for _, off := range f.promisedLocked() {
		r := f.mu.acked[off]
		kept := len(set) == 0 && len(r.holders) > 0
		for _, id := range set {
			kept = kept || r.holders[id]
		}
		if kept {
			continue
		}
		if f.o.Flush == storage.FlushSync {
			return f.violationLocked(InvAckedKept, "after the %s no member of the sync-state set %v holds the record acknowledged at %d (%d bytes; held by %v): sync flush promises it survives power loss",
				what, set, off, len(r.data), slices.Sorted(maps.Keys(r.holders)))
		}
		r.forfeited = true
		lost++
	}
	f.mu.forfeits += lost
	if lost > 0 {
		f.mu.trace = append(f.mu.trace, "          "+what+": the sync-state set lost "+strconv.Itoa(lost)+" acknowledged records (async flush does not promise them through a power loss of every member holding them)")
	}
	return nil
}

// syncSet is the group's sync-state set as the controller's leader has
// it (nil when no leader answers).
func (f *failover) syncSet() []int64 {
	r, ok := f.ctlShow()
	if !ok {
		return nil
	}
	return r.SyncSet
}

// ctlShow is the group as the controller's leader has it.
func (f *failover) ctlShow() (controller.Result, bool) {
	l := f.ctl.leader()
	if l < 0 {
		return controller.Result{}, false
	}
	f.ctl.mu.Lock()
	node := f.ctl.reps[l].node
	f.ctl.mu.Unlock()
	if node == nil {
		return controller.Result{}, false
	}
	r, err := node.LocalShow(simGroup)
	return r, err == nil
}

// onElected: replica p takes up the master role at controller epoch
// epoch (from p's loop).
func (f *failover) onElected(p *replica, epoch int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.mu.masters[epoch]; ok && id != p.id {
		return f.violationLocked(InvOneMasterPerEpoch, "%s takes up the master role at epoch %d, which b%d took", p.name, epoch, id)
	}
	f.mu.masters[epoch] = p.id
	up := map[int64]bool{}
	for _, q := range f.reps {
		up[q.id] = q.up()
	}
	for _, off := range f.promisedLocked() {
		r := f.mu.acked[off]
		// A record whose holders are all down (not yet restarted from a
		// crash: what they kept is not known yet) is checked when they
		// are back: a holder that cuts it breaks InvNoHealthyCut.
		any := false
		for id := range r.holders {
			any = any || up[id]
		}
		if any && !holds(p.store, off, r.data) {
			return f.violationLocked(InvElectedHoldsAcked, "%s, master at epoch %d with its log ending at %d, lacks the record acknowledged at %d (%d bytes; held by %v)",
				p.name, epoch, p.store.WrittenOffset(), off, len(r.data), slices.Sorted(maps.Keys(r.holders)))
		}
	}
	return nil
}

// onCut: replica p's replication link cut [from, to) from its log to
// follow its master (from p's link).
func (f *failover) onCut(p *replica, from, to int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.trace = append(f.mu.trace, "          "+p.name+" cut its log from "+strconv.FormatInt(from, 10)+" to "+strconv.FormatInt(to, 10)+" to follow its master")
	for _, off := range f.promisedLocked() {
		r := f.mu.acked[off]
		if off >= to || off+int64(len(r.data)) <= from || !r.holders[p.id] {
			continue
		}
		if f.mu.err == nil {
			f.mu.err = f.violationLocked(InvNoHealthyCut, "%s cut [%d, %d) from its log and with it the record acknowledged at %d (%d bytes), which it held",
				p.name, from, to, off, len(r.data))
		}
		delete(r.holders, p.id)
	}
}

// operatorUnclean is the operator's word when the group has had no master
// for a while and the controller says only an unclean election can elect
// one (every alive replica lacks acknowledged records: under async flush,
// after power losses): elect unclean, accepting the loss. What the new
// master lacks is forfeited: the mode did not promise it.
func (f *failover) operatorUnclean() error {
	l := f.ctl.leader()
	if l < 0 {
		return nil
	}
	f.ctl.mu.Lock()
	node := f.ctl.reps[l].node
	f.ctl.mu.Unlock()
	if node == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	show, _, err := node.Show(ctx, simGroup)
	if err != nil {
		return nil
	}
	refused := ""
	for _, p := range f.reps {
		if s := p.slaveLink(); s != nil && s.Status().CutRefused {
			refused = p.name
		}
	}
	switch {
	case show.MasterID == controller.NoMaster && strings.Contains(show.Note, "unclean"):
	case show.MasterID != controller.NoMaster && refused != "":
		// A replica keeps acknowledged records the master lacks and
		// refuses to cut them: the operator accepts the loss.
		show.Note = refused + " refuses to cut acknowledged records to follow master b" + strconv.FormatInt(show.MasterID, 10)
	default:
		return nil
	}
	f.mu.Lock()
	forfeits := f.mu.forfeits
	f.mu.Unlock()
	if f.o.Flush == storage.FlushSync && forfeits == 0 {
		// Nothing was lost beyond what the mode promises (a bit flip's
		// loss and a fault after it can be): the need is a violation.
		return f.violation(InvCatchUp, "under sync flush the group needs the operator's unclean election: %s", show.Note)
	}
	r, err := node.Elect(ctx, simGroup, true)
	f.tracef("operator: unclean election (%s): %v (%v)", show.Note, r, err)
	if err != nil || r.MasterID == controller.NoMaster {
		return nil
	}
	var m *replica
	for _, p := range f.reps {
		if p.id == r.MasterID {
			m = p
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, off := range f.promisedLocked() {
		if rec := f.mu.acked[off]; m == nil || !m.up() || !holds(m.store, off, rec.data) {
			rec.forfeited = true
		}
	}
	return nil
}
