package controller

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

// snapState builds a state with two groups, a failover and an altered set.
func snapState(t *testing.T) *State {
	t.Helper()
	s, err := NewState(Config{})
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := Group{"c", "b1"}, Group{"c", "b2"}
	cmds := []Command{
		RegisterBroker{Group: g1, ID: 0, Addr: "127.0.0.1:10911"},
		RegisterBroker{Group: g1, ID: 1, Addr: "127.0.0.1:10912"},
		RegisterBroker{Group: g1, ID: 2, Addr: "127.0.0.1:10913"},
		AlterSyncStateSet{Group: g1, From: 0, MasterEpoch: 1, NewSet: []int64{0, 1, 2}, SyncSetEpoch: 1},
		ElectMaster{Group: g1, Alive: []int64{1, 2}, MasterEpoch: 1},
		RegisterBroker{Group: g2, ID: 5, Addr: "127.0.0.1:20911", Epoch: 3},
		RegisterBroker{Group: g2, ID: 6, Addr: "127.0.0.1:20912"},
		ElectMaster{Group: g2, Alive: nil, MasterEpoch: 4},
	}
	for _, c := range cmds {
		if _, err := s.Apply(c); err != nil {
			t.Fatalf("%#v: %v", c, err)
		}
	}
	return s
}

func dump(s *State) string {
	var b bytes.Buffer
	for _, g := range s.Groups() {
		r, _ := s.Show(g)
		fmt.Fprintf(&b, "%s replicas=%v\n", r, s.Replicas(g))
	}
	return b.String()
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := snapState(t)
	b, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewState(Config{})
	if err := r.RestoreSnapshot(b); err != nil {
		t.Fatal(err)
	}
	if dump(r) != dump(s) {
		t.Fatalf("restored state differs:\n%s\nwant\n%s", dump(r), dump(s))
	}
	b2, _ := r.MarshalSnapshot()
	if !bytes.Equal(b, b2) {
		t.Fatalf("encoding is not deterministic:\n%s\n%s", b, b2)
	}
	// The restored state goes on as the original would.
	g1 := Group{"c", "b1"}
	next := []Command{
		AlterSyncStateSet{Group: g1, From: 1, MasterEpoch: 2, NewSet: []int64{1, 2}, SyncSetEpoch: 3},
		ElectMaster{Group: g1, Alive: []int64{2}, MasterEpoch: 2},
		RegisterBroker{Group: Group{"c", "b2"}, ID: 7, Addr: "127.0.0.1:20913", Epoch: 4},
	}
	for _, c := range next {
		a, errA := s.Apply(c)
		z, errZ := r.Apply(c)
		if fmt.Sprint(a, errA) != fmt.Sprint(z, errZ) {
			t.Fatalf("%#v: original %v %v, restored %v %v", c, a, errA, z, errZ)
		}
	}
	if dump(r) != dump(s) {
		t.Fatalf("states differ after more commands:\n%s\nwant\n%s", dump(r), dump(s))
	}
	// An empty state round-trips too.
	e, _ := NewState(Config{})
	eb, _ := e.MarshalSnapshot()
	if err := r.RestoreSnapshot(eb); err != nil || len(r.Groups()) != 0 {
		t.Fatalf("empty restore: %v, groups %v", err, r.Groups())
	}
}

func TestSnapshotCorruptRefused(t *testing.T) {
	s := snapState(t)
	good, _ := s.MarshalSnapshot()
	check := func(name string, b []byte) {
		t.Helper()
		r := snapState(t)
		before := dump(r)
		err := r.RestoreSnapshot(b)
		if !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("%s: err %v, want ErrBadSnapshot", name, err)
		}
		if dump(r) != before {
			t.Fatalf("%s: a refused snapshot changed the state", name)
		}
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		check(fmt.Sprintf("bit flip at %d", i), b)
	}
	for _, n := range []int{0, 3, snapshotHeader - 1, snapshotHeader, len(good) - 1} {
		check(fmt.Sprintf("cut at %d", n), good[:n])
	}
	check("trailing byte", append(bytes.Clone(good), '\n'))
	// Valid framing around a payload that breaks an invariant.
	frame := func(payload string) []byte {
		b := make([]byte, snapshotHeader)
		copy(b, snapshotMagic[:])
		binary.BigEndian.PutUint16(b[4:], SnapshotVersion)
		binary.BigEndian.PutUint32(b[6:], uint32(len(payload)))
		binary.BigEndian.PutUint32(b[10:], crc32.Checksum([]byte(payload), castagnoli))
		return append(b, payload...)
	}
	bad := map[string]string{
		"master outside set":  `{"groups":[{"cluster":"c","broker":"b","replicas":[{"id":0,"addr":"a"},{"id":1,"addr":"b"}],"master":0,"masterEpoch":1,"syncSet":[1],"syncSetEpoch":1}]}`,
		"unregistered member": `{"groups":[{"cluster":"c","broker":"b","replicas":[{"id":0,"addr":"a"}],"master":0,"masterEpoch":1,"syncSet":[0,3],"syncSetEpoch":1}]}`,
		"master epoch 0":      `{"groups":[{"cluster":"c","broker":"b","replicas":[{"id":0,"addr":"a"}],"master":0,"masterEpoch":0,"syncSet":[0],"syncSetEpoch":1}]}`,
		"duplicate group":     `{"groups":[{"cluster":"c","broker":"b","replicas":[],"master":-1,"masterEpoch":0,"syncSet":[],"syncSetEpoch":0},{"cluster":"c","broker":"b","replicas":[],"master":-1,"masterEpoch":0,"syncSet":[],"syncSetEpoch":0}]}`,
		"empty group name":    `{"groups":[{"cluster":"","broker":"b","replicas":[],"master":-1,"masterEpoch":0,"syncSet":[],"syncSetEpoch":0}]}`,
		"unknown field":       `{"groups":[],"extra":1}`,
		"duplicate replica":   `{"groups":[{"cluster":"c","broker":"b","replicas":[{"id":0,"addr":"a"},{"id":0,"addr":"b"}],"master":-1,"masterEpoch":0,"syncSet":[],"syncSetEpoch":0}]}`,
		"not json":            `groups`,
	}
	for name, p := range bad {
		check(name, frame(p))
	}
	ok := frame(`{"groups":[{"cluster":"c","broker":"b","replicas":[{"id":0,"addr":"a"}],"master":0,"masterEpoch":1,"syncSet":[0],"syncSetEpoch":1}]}`)
	r, _ := NewState(Config{})
	if err := r.RestoreSnapshot(ok); err != nil {
		t.Fatalf("a valid hand-made snapshot refused: %v", err)
	}
}
