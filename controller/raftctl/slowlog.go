package raftctl

import (
	"log/slog"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// timedStore is the bolt log and stable store with its writes timed: a
// write slower than slow (each one an fsync) is logged, since every
// controller answer that changes state waits for such writes on a quorum
// of replicas, and a controller sharing a disk with brokers' writeback
// can stall there for seconds.
type timedStore struct {
	*raftboltdb.BoltStore
	slow time.Duration
	log  *slog.Logger
}

func (s timedStore) timed(what string, n int, start time.Time) {
	if d := time.Since(start); d >= s.slow {
		s.log.Warn("slow Raft store write", "op", what, "entries", n, "took", d.Round(time.Millisecond))
	}
}

func (s timedStore) StoreLog(l *raft.Log) error {
	defer s.timed("StoreLog", 1, time.Now())
	return s.BoltStore.StoreLog(l)
}

func (s timedStore) StoreLogs(ls []*raft.Log) error {
	defer s.timed("StoreLogs", len(ls), time.Now())
	return s.BoltStore.StoreLogs(ls)
}

func (s timedStore) Set(k, v []byte) error {
	defer s.timed("Set", 0, time.Now())
	return s.BoltStore.Set(k, v)
}

func (s timedStore) SetUint64(k []byte, v uint64) error {
	defer s.timed("SetUint64", 0, time.Now())
	return s.BoltStore.SetUint64(k, v)
}

func (s timedStore) DeleteRange(lo, hi uint64) error {
	defer s.timed("DeleteRange", int(hi-lo+1), time.Now())
	return s.BoltStore.DeleteRange(lo, hi)
}
