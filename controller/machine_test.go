package controller

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t *testing.T, cfg Config) *Machine {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConfig(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if c.ElectionTimeout != DefaultElectionTimeout || c.Validate() != nil {
		t.Fatalf("defaults: %v, %v", c, c.Validate())
	}
	if got := c.String(); got != "electionTimeout=3s unclean=false recoveryWait=6s" {
		t.Fatalf("String = %q", got)
	}
	if _, err := New(Config{ElectionTimeout: -time.Second}); err == nil || !strings.Contains(err.Error(), "ElectionTimeout") {
		t.Fatalf("negative timeout: %v", err)
	}
}

func TestStateRefusesHeartbeatAndUnknownCommands(t *testing.T) {
	st, _ := NewState(Config{})
	if _, err := st.Apply(Heartbeat{Group: Group{"c", "g"}, ID: 1}); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("heartbeat on State: %v", err)
	}
	type other struct{ Heartbeat }
	if _, err := st.Apply(other{}); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("unknown command: %v", err)
	}
}

func TestElectWithAliveMasterChangesNothing(t *testing.T) {
	m := mustNew(t, Config{})
	g := Group{"c", "g"}
	m.Apply(RegisterBroker{Group: g, ID: 1, Addr: "a1"}, t0)
	m.Apply(RegisterBroker{Group: g, ID: 2, Addr: "a2"}, t0)
	r, err := m.Apply(m.Elect(g, t0.Add(time.Second)), t0.Add(time.Second))
	if err != nil || r.Changed || r.MasterID != 1 || r.MasterEpoch != 1 {
		t.Fatalf("elect with the master alive: %v %v", r, err)
	}
	// An ElectMaster naming an unregistered broker is refused.
	if _, err := m.Apply(ElectMaster{Group: g, Alive: []int64{3}, MasterEpoch: 1}, t0); !errors.Is(err, ErrUnknownBroker) {
		t.Fatalf("unknown alive broker: %v", err)
	}
}

// Two elections made before either is applied (two ticks while Raft was
// slow): the second finds the epoch moved on and changes nothing.
func TestStaleElectionRefused(t *testing.T) {
	m := mustNew(t, Config{ElectionTimeout: time.Second})
	g := Group{"c", "g"}
	for id := int64(1); id <= 3; id++ {
		m.Apply(RegisterBroker{Group: g, ID: id, Addr: fmt.Sprint("a", id)}, t0)
	}
	m.Apply(AlterSyncStateSet{Group: g, From: 1, MasterEpoch: 1, NewSet: []int64{1, 2, 3}, SyncSetEpoch: 1}, t0)
	m.Apply(Heartbeat{Group: g, ID: 3, Epoch: 1}, t0.Add(2*time.Second))
	first := m.Tick(t0.Add(2 * time.Second))
	m.Apply(Heartbeat{Group: g, ID: 2, Epoch: 1}, t0.Add(2500*time.Millisecond))
	second := m.Tick(t0.Add(2500 * time.Millisecond))
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("ticks: %v %v", first, second)
	}
	r, err := m.Apply(first[0], t0.Add(3*time.Second))
	if err != nil || r.MasterID != 3 || r.MasterEpoch != 2 {
		t.Fatalf("first election: %v %v", r, err)
	}
	r, err = m.Apply(second[0], t0.Add(3*time.Second))
	if !errors.Is(err, ErrStaleElection) || r.MasterID != 3 || r.MasterEpoch != 2 || r.Changed {
		t.Fatalf("second election: %v %v", r, err)
	}
}

func TestRegisterEpochOverflowRefused(t *testing.T) {
	m := mustNew(t, Config{})
	_, err := m.Apply(RegisterBroker{Group: Group{"c", "g"}, ID: 1, Addr: "a", Epoch: math.MaxInt64}, t0)
	if !errors.Is(err, ErrBadCommand) || len(m.State().Groups()) != 0 {
		t.Fatalf("epoch MaxInt64: %v, groups %v", err, m.State().Groups())
	}
}

func TestLateHeartbeatDoesNotMoveBack(t *testing.T) {
	m := mustNew(t, Config{})
	g := Group{"c", "g"}
	m.Apply(RegisterBroker{Group: g, ID: 1, Addr: "a1"}, t0)
	m.Apply(Heartbeat{Group: g, ID: 1}, t0.Add(5*time.Second))
	m.Apply(Heartbeat{Group: g, ID: 1}, t0.Add(time.Second))
	if last, _ := m.Liveness().LastHeartbeat(g, 1); !last.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("last heartbeat %v", last)
	}
}

func TestResultDoesNotAliasState(t *testing.T) {
	m := mustNew(t, Config{})
	g := Group{"c", "g"}
	m.Apply(RegisterBroker{Group: g, ID: 1, Addr: "a1"}, t0)
	r, _ := m.State().Show(g)
	r.SyncSet[0] = 99
	m.State().Replicas(g)[1] = "changed"
	if r2, _ := m.State().Show(g); r2.SyncSet[0] != 1 || r2.MasterAddr != "a1" {
		t.Fatalf("state changed through a result: %v", r2)
	}
}

func TestCheckPanicsOnBrokenInvariant(t *testing.T) {
	st, _ := NewState(Config{})
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "not in the sync-state set") {
			t.Fatalf("panic = %v", p)
		}
	}()
	st.check(Group{"c", "g"}, &groupState{replicas: map[int64]string{1: "a"}, master: 1, masterEpoch: 1, syncSet: map[int64]bool{}})
}

// TestReplicatedLogDeterminism drives a Machine through seeded random
// operations, logs the replicated commands it applied (what Raft will carry),
// and replays the log on a fresh State with no liveness at all: every
// result and the final state must be the same. Along the way it asserts
// that epochs never go back and that no epoch ever has two masters.
func TestReplicatedLogDeterminism(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		for seed := uint64(1); seed <= 20; seed++ {
			t.Run(fmt.Sprintf("unclean=%v/seed=%d", unclean, seed), func(t *testing.T) {
				runRandom(t, seed, Config{ElectionTimeout: time.Second, UncleanElection: unclean})
			})
		}
	}
}

func runRandom(t *testing.T, seed uint64, cfg Config) {
	rng := rand.New(rand.NewPCG(seed, seed))
	m := mustNew(t, cfg)
	groups := []Group{{"c", "g1"}, {"c", "g2"}}
	type entry struct {
		cmd Command
		out string
	}
	var log []entry
	masters := map[Group]map[int64]int64{} // epoch → master
	lastEpoch := map[Group]int64{}
	// brokerEpoch is the epoch each broker last learnt, as a broker would.
	brokerEpoch := map[Group]map[int64]int64{}
	for _, g := range groups {
		masters[g], brokerEpoch[g] = map[int64]int64{}, map[int64]int64{}
	}
	apply := func(cmd Command, now time.Time) {
		var (
			before   Result
			eligible []int64 // who may be elected cleanly
			acked    int64
		)
		if e, ok := cmd.(ElectMaster); ok {
			before, _ = m.State().Show(e.Group)
			if gs := m.State().groups[e.Group]; gs != nil {
				for id := range gs.replicas {
					if gs.electable(id) {
						eligible = append(eligible, id)
					}
				}
				acked = gs.acked
			}
		}
		r, err := m.Apply(cmd, now)
		if e, ok := cmd.(ElectMaster); ok && err == nil && r.MasterChanged && r.MasterID != NoMaster && before.MasterEpoch > 0 {
			// Never a master from outside the sync-state set (or the sets
			// before it while no master took up its role), nor one below
			// what the group acknowledged, nor one behind another alive
			// eligible replica, unless unclean and said so.
			if !r.Unclean {
				if !slices.Contains(eligible, r.MasterID) {
					t.Fatalf("seed %d: %s elected %d outside %v", seed, r.Group, r.MasterID, eligible)
				}
				if p := e.Positions[r.MasterID]; p.End < acked {
					t.Fatalf("seed %d: %s elected %d at %v below acknowledged %d", seed, r.Group, r.MasterID, p, acked)
				}
				for _, id := range e.Alive {
					if slices.Contains(eligible, id) && e.Positions[id].Compare(e.Positions[r.MasterID]) > 0 {
						t.Fatalf("seed %d: %s elected %d at %v, %d is alive at %v", seed, r.Group, r.MasterID,
							e.Positions[r.MasterID], id, e.Positions[id])
					}
				}
			} else if !cfg.UncleanElection && !e.Unclean {
				t.Fatalf("seed %d: %s elected %d unclean, not allowed", seed, r.Group, r.MasterID)
			}
		}
		if hb, ok := cmd.(Heartbeat); ok {
			log = append(log, entry{hb, ""}) // a renewal: its answer is the machine's, not the state's
		} else {
			log = append(log, entry{cmd, fmt.Sprint(r, err)})
		}
		if err != nil {
			return
		}
		g := r.Group
		if r.MasterEpoch < lastEpoch[g] {
			t.Fatalf("seed %d: %s epoch went back %d → %d", seed, g, lastEpoch[g], r.MasterEpoch)
		}
		lastEpoch[g] = r.MasterEpoch
		if r.MasterID != NoMaster {
			if prev, ok := masters[g][r.MasterEpoch]; ok && prev != r.MasterID {
				t.Fatalf("seed %d: %s epoch %d has two masters %d and %d", seed, g, r.MasterEpoch, prev, r.MasterID)
			}
			masters[g][r.MasterEpoch] = r.MasterID
		}
	}
	now := t0
	for step := 0; step < 400; step++ {
		now = now.Add(time.Duration(rng.IntN(700)) * time.Millisecond)
		g := groups[rng.IntN(len(groups))]
		id := int64(rng.IntN(4))
		switch op := rng.IntN(10); {
		case op < 2:
			apply(RegisterBroker{Group: g, ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", 10000+id), Epoch: brokerEpoch[g][id]}, now)
		case op < 7:
			end := int64(rng.IntN(1000))
			hb := Heartbeat{Group: g, ID: id, Epoch: brokerEpoch[g][id], Pos: Position{Epoch: uint64(rng.IntN(3)), End: end}}
			if m.NamesMaster(hb) {
				hb.Pos.Confirmed = end - int64(rng.IntN(100))
				apply(hb, now) // replicated: the master's renewal
				brokerEpoch[g][id] = lastEpoch[g]
				continue
			}
			r, err := m.Apply(hb, now)
			if err == nil {
				brokerEpoch[g][id] = r.MasterEpoch
			}
		case op < 9:
			r, err := m.State().Show(g)
			if err != nil || r.MasterID == NoMaster {
				continue
			}
			var set []int64
			for _, id := range []int64{0, 1, 2, 3} {
				if id == r.MasterID || rng.IntN(2) == 0 {
					set = append(set, id)
				}
			}
			apply(AlterSyncStateSet{Group: g, From: r.MasterID, MasterEpoch: r.MasterEpoch, NewSet: set, SyncSetEpoch: r.SyncSetEpoch}, now)
		default:
			for _, c := range m.Tick(now) {
				apply(c, now)
			}
		}
	}
	// Replay on a follower: a bare State, no liveness, no clock.
	follower, _ := NewState(cfg)
	for i, e := range log {
		if hb, ok := e.cmd.(Heartbeat); ok {
			follower.renew(hb)
			continue
		}
		r, err := follower.Apply(e.cmd)
		if got := fmt.Sprint(r, err); got != e.out {
			t.Fatalf("seed %d: entry %d %#v:\nleader:   %s\nfollower: %s", seed, i, e.cmd, e.out, got)
		}
	}
	for _, g := range m.State().Groups() {
		a, _ := m.State().Show(g)
		b, _ := follower.Show(g)
		if a.String() != b.String() {
			t.Fatalf("seed %d: %s differs:\nleader:   %s\nfollower: %s", seed, g, a, b)
		}
	}
	a, _ := m.State().MarshalSnapshot()
	b, _ := follower.MarshalSnapshot()
	if !bytes.Equal(a, b) {
		t.Fatalf("seed %d: snapshots differ:\nleader:   %s\nfollower: %s", seed, a, b)
	}
	t.Logf("seed %d: %d replicated commands, epochs %v", seed, len(log), lastEpoch)
	if len(log) == 0 {
		t.Fatalf("seed %d: no replicated command", seed)
	}
}
