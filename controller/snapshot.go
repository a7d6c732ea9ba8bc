package controller

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
)

// Snapshot encoding of State (what a Raft snapshot holds):
//
//	bytes  field    why
//	0..3   magic    "SCS1": refuses a file that is not a controller snapshot
//	4..5   version  big-endian uint16, SnapshotVersion; an unknown one is refused
//	6..9   length   big-endian uint32, bytes of payload: a torn file is refused
//	10..13 crc      CRC-32C of payload: a flipped bit is refused
//	14..   payload  JSON of snapshotBody: groups in Groups() order, ids sorted,
//	                so equal states encode to equal bytes
//
// The configuration is not in the snapshot: every replica runs with its own
// (which must be the same on all of them, see Config).
const SnapshotVersion = 1

var snapshotMagic = [4]byte{'S', 'C', 'S', '1'}

const snapshotHeader = 14

// ErrBadSnapshot: a snapshot that does not decode or breaks an invariant.
var ErrBadSnapshot = errors.New("controller: bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type snapshotBody struct {
	Groups []snapshotGroup `json:"groups"`
}

type snapshotGroup struct {
	Cluster      string            `json:"cluster"`
	Broker       string            `json:"broker"`
	Replicas     []snapshotReplica `json:"replicas"`
	Master       int64             `json:"master"`
	MasterEpoch  int64             `json:"masterEpoch"`
	SyncSet      []int64           `json:"syncSet"`
	SyncSetEpoch int64             `json:"syncSetEpoch"`
	Acked        int64             `json:"acked,omitempty"`
	UncleanEpoch int64             `json:"uncleanEpoch,omitempty"`
	Taken        bool              `json:"taken,omitempty"`
	FormerSet    []int64           `json:"formerSet,omitempty"`
}

type snapshotReplica struct {
	ID   int64  `json:"id"`
	Addr string `json:"addr"`
}

// MarshalSnapshot encodes the state (layout above). Equal states give equal
// bytes.
func (s *State) MarshalSnapshot() ([]byte, error) {
	var body snapshotBody
	body.Groups = []snapshotGroup{}
	for _, g := range s.Groups() {
		gs := s.groups[g]
		sg := snapshotGroup{Cluster: g.Cluster, Broker: g.Broker, Master: gs.master,
			MasterEpoch: gs.masterEpoch, SyncSet: sortedIDs(gs.syncSet), SyncSetEpoch: gs.syncSetEpoch,
			Acked: gs.acked, UncleanEpoch: gs.uncleanEpoch, Taken: gs.taken, FormerSet: sortedIDs(gs.formerSet), Replicas: []snapshotReplica{}}
		ids := slices.Sorted(maps.Keys(gs.replicas))
		for _, id := range ids {
			sg.Replicas = append(sg.Replicas, snapshotReplica{ID: id, Addr: gs.replicas[id]})
		}
		if sg.SyncSet == nil {
			sg.SyncSet = []int64{}
		}
		body.Groups = append(body.Groups, sg)
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("controller: encode snapshot: %w", err)
	}
	out := make([]byte, snapshotHeader, snapshotHeader+len(payload))
	copy(out, snapshotMagic[:])
	binary.BigEndian.PutUint16(out[4:], SnapshotVersion)
	binary.BigEndian.PutUint32(out[6:], uint32(len(payload)))
	binary.BigEndian.PutUint32(out[10:], crc32.Checksum(payload, castagnoli))
	return append(out, payload...), nil
}

// RestoreSnapshot replaces the state with the one encoded in b. A snapshot
// that does not validate (magic, version, length, checksum, JSON, or an
// invariant such as a master outside the sync-state set) is refused with an
// error wrapping ErrBadSnapshot and the state is left as it was.
func (s *State) RestoreSnapshot(b []byte) error {
	groups, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	s.groups = groups
	return nil
}

func decodeSnapshot(b []byte) (map[Group]*groupState, error) {
	if len(b) < snapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadSnapshot, len(b), snapshotHeader)
	}
	if !bytes.Equal(b[:4], snapshotMagic[:]) {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrBadSnapshot, b[:4], snapshotMagic[:])
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d not supported (this build reads %d)", ErrBadSnapshot, v, SnapshotVersion)
	}
	n := binary.BigEndian.Uint32(b[6:])
	payload := b[snapshotHeader:]
	if uint64(n) != uint64(len(payload)) {
		return nil, fmt.Errorf("%w: header says %d payload bytes, there are %d", ErrBadSnapshot, n, len(payload))
	}
	if got, want := crc32.Checksum(payload, castagnoli), binary.BigEndian.Uint32(b[10:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, header says %08x", ErrBadSnapshot, got, want)
	}
	var body snapshotBody
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	groups := make(map[Group]*groupState, len(body.Groups))
	for _, sg := range body.Groups {
		g := Group{Cluster: sg.Cluster, Broker: sg.Broker}
		gs, err := sg.validate(g)
		if err != nil {
			return nil, fmt.Errorf("%w: group %s: %v", ErrBadSnapshot, g, err)
		}
		if _, dup := groups[g]; dup {
			return nil, fmt.Errorf("%w: group %s twice", ErrBadSnapshot, g)
		}
		groups[g] = gs
	}
	return groups, nil
}

// validate turns a decoded group into its state, checking what State.check
// asserts (a bad snapshot is bad input, not a bug: an error, not a panic).
func (sg snapshotGroup) validate(g Group) (*groupState, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	gs := &groupState{replicas: map[int64]string{}, master: sg.Master, masterEpoch: sg.MasterEpoch,
		syncSet: map[int64]bool{}, syncSetEpoch: sg.SyncSetEpoch, acked: sg.Acked}
	if sg.Acked < 0 {
		return nil, fmt.Errorf("acked %d < 0", sg.Acked)
	}
	if sg.UncleanEpoch < 0 || sg.UncleanEpoch > sg.MasterEpoch {
		return nil, fmt.Errorf("uncleanEpoch %d not in [0, masterEpoch %d]", sg.UncleanEpoch, sg.MasterEpoch)
	}
	gs.uncleanEpoch = sg.UncleanEpoch
	gs.taken = sg.Taken
	for _, r := range sg.Replicas {
		if r.ID < 0 || r.Addr == "" {
			return nil, fmt.Errorf("replica id=%d addr=%q: id >= 0 and addr set", r.ID, r.Addr)
		}
		if _, dup := gs.replicas[r.ID]; dup {
			return nil, fmt.Errorf("replica %d twice", r.ID)
		}
		gs.replicas[r.ID] = r.Addr
	}
	for _, id := range sg.SyncSet {
		if _, ok := gs.replicas[id]; !ok {
			return nil, fmt.Errorf("sync-state member %d is not registered", id)
		}
		if gs.syncSet[id] {
			return nil, fmt.Errorf("sync-state member %d twice", id)
		}
		gs.syncSet[id] = true
	}
	for _, id := range sg.FormerSet {
		if _, ok := gs.replicas[id]; !ok {
			return nil, fmt.Errorf("former sync-state member %d is not registered", id)
		}
		if gs.formerSet == nil {
			gs.formerSet = map[int64]bool{}
		}
		gs.formerSet[id] = true
	}
	if gs.masterEpoch < 0 || gs.syncSetEpoch < 0 {
		return nil, fmt.Errorf("negative epoch (master %d, set %d)", gs.masterEpoch, gs.syncSetEpoch)
	}
	if gs.master != NoMaster {
		if _, ok := gs.replicas[gs.master]; !ok {
			return nil, fmt.Errorf("master %d is not registered", gs.master)
		}
		if !gs.syncSet[gs.master] {
			return nil, fmt.Errorf("master %d is not in the sync-state set", gs.master)
		}
		if gs.masterEpoch < 1 {
			return nil, fmt.Errorf("master %d at epoch %d", gs.master, gs.masterEpoch)
		}
	}
	return gs, nil
}
