package sim

import (
	"bytes"
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// appendBatch sends k records to the master, one at a time, each
// acknowledged once its replication to every sync-state member is
// confirmed (SYNC_MASTER). With no master it waits, as a producer
// retries, up to 20 s.
func (f *failover) appendBatch(k int) error {
	// A producer retries until the group takes writes: a master, with a
	// slave in its sync-state set (until it adds one, a SYNC_MASTER
	// acknowledges nothing).
	var p *replica
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if p = f.currentMaster(); p != nil && len(p.syncSetNow()) > 1 {
			break
		}
	}
	if p == nil {
		f.tracef("no master for 20 s: %d appends not sent", k)
		return f.operatorUnclean()
	}
	ok := 0
	for i := 0; i < k; i++ {
		if !p.canWrite() {
			break
		}
		body := make([]byte, 1+f.rng.Intn(2000))
		f.rng.Read(body)
		m := &storage.Message{Topic: "sim", QueueID: int32(f.rng.Intn(4)), Body: body, BornTimestamp: 1700000000000,
			BornHost: bornHost, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
			Properties: record.AppendProperty(nil, record.PropertyTags, "t"), TagsCode: record.TagsCode("t")}
		res, err := p.store.Append(context.Background(), m)
		if err != nil {
			continue
		}
		hm := p.master.Load()
		if hm == nil {
			continue
		}
		end := res.PhysicalOffset + int64(res.Size)
		if err := hm.WaitReplicated(end); err != nil {
			continue // not acknowledged: the producer sees the error
		}
		buf := make([]byte, res.Size)
		if n, _, err := p.store.ReadLog(res.PhysicalOffset, buf); err != nil || n != int(res.Size) {
			return f.violation(InvAckedKept, "%s: the record just acknowledged at %d reads back %d bytes, %v", p.name, res.PhysicalOffset, n, err)
		}
		holders := map[int64]bool{p.id: true}
		for _, s := range hm.Slaves() {
			if s.AckOffset >= end {
				holders[s.BrokerID] = true
			}
		}
		if err := f.noteAcked(p, res.PhysicalOffset, buf, bytes.Index(buf, body), holders); err != nil {
			return err
		}
		ok++
	}
	f.tracef("%s acknowledged %d of %d (log end %d)", p.name, ok, k, p.store.WrittenOffset())
	return nil
}

// crash ends the processes of ps at one instant (power: their machines
// lose power too, keeping what was synced, torn at random), and starts
// each again after a delay of its own: up to 8 s for one replica (an
// election may come first), 3 s for several.
func (f *failover) crash(ps []*replica, power bool) error {
	pw := make([]bool, len(ps))
	for i := range pw {
		pw[i] = power
	}
	return f.crashEach(ps, pw)
}

// crashEach is crash with a choice per replica: power[i] for ps[i] (a
// power loss of some machines of the group and a process crash of the
// others at one instant).
func (f *failover) crashEach(ps []*replica, power []bool) error {
	f.faultBegins("a crash")
	set := f.syncSet()
	// Every process stops appending first (a crash image must not read
	// a mapping being written), then the images are taken, together.
	imgs := make([]*vfs.MemFS, len(ps))
	ends := make([]int64, len(ps))
	for i, p := range ps {
		if p.up() {
			p.quiesce()
			ends[i] = p.store.WrittenOffset()
		}
	}
	for i, p := range ps {
		if power[i] {
			imgs[i] = p.fs.CrashClone(f.rng)
		} else {
			imgs[i] = p.fs.ProcessCrashClone()
		}
	}
	for i, p := range ps {
		if p.up() {
			p.closeStore()
		}
		p.fs = imgs[i]
		if power[i] {
			p.staleEnd = ends[i]
		} else {
			p.staleEnd = 0
		}
	}
	var lost, crashed []*replica
	for i, p := range ps {
		if power[i] {
			lost = append(lost, p)
		} else {
			crashed = append(crashed, p)
		}
	}
	var whats []string
	if len(lost) > 0 {
		whats = append(whats, "power loss of "+joinNames(lost))
	}
	if len(crashed) > 0 {
		whats = append(whats, "process crash of "+joinNames(crashed))
	}
	what := strings.Join(whats, " and ")
	f.tracef("%s", what)
	most := 8 * time.Second
	if len(ps) > 1 {
		most = 3 * time.Second
	}
	delays := make([]time.Duration, len(ps))
	for i := range ps {
		delays[i] = time.Duration(f.rng.Int63n(int64(most)))
	}
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(delays[a] - delays[b]) })
	var slept time.Duration
	for _, i := range order {
		time.Sleep(delays[i] - slept)
		slept = delays[i]
		if err := ps[i].open(); err != nil {
			return err
		}
	}
	return f.checkForfeits(what, set)
}

// partitionFor cuts every node of in from every node outside it for a
// while (appends go on), then heals.
func (f *failover) partitionFor(in []string, why string) error {
	f.faultBegins("a partition")
	d := time.Duration(500+f.rng.Intn(9500)) * time.Millisecond
	for _, a := range in {
		for _, b := range f.names() {
			if !slices.Contains(in, b) {
				f.net.Partition(a, b)
			}
		}
	}
	f.ctl.syncLinks()
	f.tracef("partition %v from the rest for %v (%s)", in, d, why)
	if err := f.appendBatch(1 + f.rng.Intn(5)); err != nil {
		return err
	}
	time.Sleep(d)
	f.heal()
	return nil
}

func (f *failover) heal() {
	f.net.Heal()
	f.ctl.syncLinks()
	f.tracef("healed")
}

// isolate cuts one node off.
func (f *failover) isolate(name string) error { return f.partitionFor([]string{name}, "isolated") }

// isolateWithLeader cuts the master and the controller's Raft leader off
// together: they reach each other and nobody else.
func (f *failover) isolateWithLeader(master *replica) error {
	l := f.ctl.leader()
	if l < 0 {
		return f.isolate(master.name)
	}
	return f.partitionFor([]string{master.name, f.ctl.reps[l].name}, "the master with the controller leader")
}

// oneWay cuts one way only between the master and every other node: what
// it sends is lost, or what it is sent.
func (f *failover) oneWay(master *replica) error {
	f.faultBegins("a one-way cut")
	d := time.Duration(500+f.rng.Intn(9500)) * time.Millisecond
	out := f.rng.Intn(2) == 0
	for _, b := range f.names() {
		if b == master.name {
			continue
		}
		if out {
			f.net.Drop(master.name, b)
		} else {
			f.net.Drop(b, master.name)
		}
	}
	f.ctl.syncLinks()
	dir := "to"
	if out {
		dir = "from"
	}
	f.tracef("one-way cut: everything %s %s lost for %v", dir, master.name, d)
	if err := f.appendBatch(1 + f.rng.Intn(5)); err != nil {
		return err
	}
	time.Sleep(d)
	f.heal()
	return nil
}

// slowLink delays every write between the master and the other brokers.
func (f *failover) slowLink(master *replica) error {
	f.faultBegins("a slow link")
	d := time.Duration(1+f.rng.Intn(3000)) * time.Millisecond
	for _, p := range f.reps {
		if p != master {
			f.net.Delay(master.name, p.name, d)
		}
	}
	f.tracef("links from %s slowed to %v a write", master.name, d)
	if err := f.appendBatch(1 + f.rng.Intn(5)); err != nil {
		return err
	}
	f.heal()
	return nil
}

// crashController stops a controller replica (the leader half the time)
// and starts it again on its Raft state.
func (f *failover) crashController() error {
	f.faultBegins("a controller crash")
	i := f.rng.Intn(ctlReplicas)
	if l := f.ctl.leader(); l >= 0 && f.rng.Intn(2) == 0 {
		i = l
	}
	d := time.Duration(100+f.rng.Intn(5000)) * time.Millisecond
	f.ctl.crash(i)
	f.tracef("controller %s crashed for %v", f.ctl.reps[i].name, d)
	time.Sleep(d)
	return f.ctl.start(i)
}
