package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/offsets"
	"github.com/samsamq/samsa/protocol"
)

// masterCallTimeout bounds each request a slave makes to its master
// (RocketMQ's BrokerOuterAPI uses 3 s for these).
const masterCallTimeout = 3 * time.Second

// errNoMaster: the slave does not know a live master to copy from.
var errNoMaster = errors.New("broker: no master known (the name server names none)")

// slaveSync is a slave's SlaveSynchronize: every SlaveSyncInterval, and at
// once when the name server names a new master, it copies the master's
// topic configs (GET_ALL_TOPIC_CONFIG), consumer offsets
// (GET_ALL_CONSUMER_OFFSET) and subscription groups
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), and persists them as the broker
// does its own.
//
// Offsets committed to the slave (consumers do that while the master is
// gone) are kept as local changes and go to the master first, with
// UPDATE_CONSUMER_OFFSET, when they are ahead of the master's: after a
// fail-over and return the group resumes from the furthest point either
// broker saw, rather than re-reading everything consumed meanwhile. (An
// offset an operator moved back on the master while the slave still held
// a local commit ahead of it is moved forward again; resets are made with
// the consumers stopped, and then the slave has nothing pending.) A local
// commit the master is already at or past is dropped. Until the master
// takes a local commit, the copy of the master's table leaves that queue
// alone.
//
// The loop (run) is the only goroutine; round may also be called directly
// (tests). Rounds are serialised.
type slaveSync struct {
	slaveSyncDeps
	kick chan struct{} // cap 1: a round is wanted now

	mu sync.Mutex // one round at a time
	// topicCursor is the master's change cursor the slave's topic table
	// is as of (slave_sync_topics.go), and topicMaster that master's
	// address; under mu.
	topicCursor string
	topicMaster string
	// topicCopies counts the topic tables copied whole, topicDeltas the
	// rounds that took the master's changes alone.
	topicCopies atomic.Int64
	topicDeltas atomic.Int64
	rounds      atomic.Int64
	failures    atomic.Int64
	lastOK      atomic.Int64 // unix ms of the last round that copied everything
	failing     atomic.Bool  // the last round failed (logged once per streak)
	lastHint    atomic.Int64 // unix ns of the last kick onDispatch gave
}

// slaveSyncDeps is what the metadata sync takes from the broker: the
// tables it copies into, the client it asks the master with, and the
// replication wiring's word on the master and the role.
type slaveSyncDeps struct {
	log      *slog.Logger
	clock    func() time.Time // Config.Clock: lastOK's time
	interval time.Duration    // slaveSyncInterval
	stop     <-chan struct{}  // closed when the broker stops: run returns
	rpc      *rpcClient       // signed, with the broker's outbound TLS; close closes it
	topics   *topicManager
	groups   *groupManager
	offsets  *offsets.Table
	// topicsChanged re-registers with the name servers now (a copied
	// topic table).
	topicsChanged func()
	// adoptDelayOffsets and adoptTimerCheckpoint hand the master's
	// delay-level progress and timer checkpoint (an answer's body) to
	// delayed delivery (slave_sync_delay.go).
	adoptDelayOffsets    func(body []byte) error
	adoptTimerCheckpoint func(body []byte) error
	// isSlave: this broker takes no writes now (slave.go); masterAddr:
	// the master's remoting address as the name server last named it;
	// addr: this broker's own.
	isSlave    func() bool
	masterAddr func() string
	addr       func() string
	// controllerMode: the role changes at runtime; a round while this
	// replica is master copies nothing.
	controllerMode bool
	// pageBytes is the largest answer the slave asks for when it copies
	// the master's topics in pages (slave_sync_topics.go): the answer
	// limit; tests set less.
	pageBytes int
}

// hintEvery bounds how often replicated records of unknown queues kick a
// round (onDispatch).
const hintEvery = time.Second

// onDispatch is the slave's dispatch hook: a replicated record that opens
// a queue (queue offset 0) of a topic this replica does not know, or
// beyond the queues it knows, means the master's tables changed since
// the last copy; a round runs at once (at most one a hintEvery) instead
// of up to SlaveSyncInterval later. A replica promoted meanwhile would
// otherwise lack the topic's config (a send would auto-create it with
// the default queue count). The check costs one comparison a record.
func (s *slaveSync) onDispatch(topic string, qid int32, qoff int64) {
	if qoff != 0 || !s.isSlave() {
		return
	}
	if tc, ok := s.topics.get(topic); ok && int(qid) < tc.ReadQueueNums {
		return
	}
	now := time.Now().UnixNano()
	last := s.lastHint.Load()
	if now-last < int64(hintEvery) || !s.lastHint.CompareAndSwap(last, now) {
		return
	}
	s.kickNow()
}

func newSlaveSync(d slaveSyncDeps) *slaveSync {
	return &slaveSync{slaveSyncDeps: d, kick: make(chan struct{}, 1)}
}

// kickNow asks the loop for a round now (the master changed).
func (s *slaveSync) kickNow() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// run is the loop: a round every SlaveSyncInterval or when kicked, until
// the broker stops.
func (s *slaveSync) run() {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.kick:
		}
		s.logRound(s.round())
	}
}

func (s *slaveSync) logRound(err error) {
	switch {
	case err == nil && s.failing.Swap(false):
		s.log.Info("broker: metadata copied from the master again", "master", s.masterAddr())
	case err != nil && !s.failing.Swap(true):
		s.log.Warn("broker: metadata sync with the master failed; retrying every slaveSyncInterval",
			"master", s.masterAddr(), "err", err)
	}
}

// round copies everything once from the current master.
func (s *slaveSync) round() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controllerMode && !s.isSlave() {
		return nil // controller mode, master now: nothing to copy
	}
	s.rounds.Add(1)
	master := s.masterAddr()
	if master == "" || master == s.addr() {
		s.failures.Add(1)
		return errNoMaster
	}
	// Each part goes on when another fails, as RocketMQ's syncAll does.
	err := errors.Join(s.syncTopics(master), s.syncOffsets(master), s.syncGroups(master), s.syncDelayOffsets(master),
		s.syncTimerCheckpoint(master))
	if err != nil {
		s.failures.Add(1)
		return err
	}
	s.lastOK.Store(s.clock().UnixMilli())
	return nil
}

// call sends req to the master and returns a SUCCESS answer.
func (s *slaveSync) call(master string, req *protocol.Command) (*protocol.Command, error) {
	resp, err := s.rpc.call(master, req, masterCallTimeout)
	if err != nil {
		return nil, fmt.Errorf("broker: %s to master %s: %w", protocol.RequestName(req.Code), master, err)
	}
	if resp.Code != protocol.Success {
		return nil, fmt.Errorf("broker: %s to master %s: code %d: %s", protocol.RequestName(req.Code), master, resp.Code, resp.Remark)
	}
	return resp, nil
}

// fetch asks the master for one of its tables (code) and decodes the
// answer's body into v.
func (s *slaveSync) fetch(master string, code int32, v any) error {
	resp, err := s.call(master, protocol.NewRequest(code, nil, nil))
	if err != nil {
		return err
	}
	if err := protocol.UnmarshalBody(resp.Body, v); err != nil {
		return fmt.Errorf("broker: %s from master %s: %w", protocol.RequestName(code), master, err)
	}
	return nil
}

// syncOffsets hands the master the offsets committed here that are ahead
// of its own (UPDATE_CONSUMER_OFFSET each), then adopts the master's
// table (offsets.Table.Sync).
func (s *slaveSync) syncOffsets(master string) error {
	var w protocol.ConsumerOffsetSerializeWrapper
	if err := s.fetch(master, protocol.GetAllConsumerOffset, &w); err != nil {
		return err
	}
	return s.offsets.Sync(master, w.OffsetTable, func(k offsets.Key, off int64) error {
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: k.Group, Topic: k.Topic, QueueID: k.Queue, CommitOffset: off}
		resp, err := s.rpc.call(master, protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil), masterCallTimeout)
		if err == nil && refusedCommit(resp.Code) {
			return &offsets.Refused{Reason: resp.Remark}
		}
		if err == nil && resp.Code != protocol.Success {
			err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
		}
		if err != nil {
			return fmt.Errorf("broker: %s to master %s: %w", protocol.RequestName(protocol.UpdateConsumerOffset), master, err)
		}
		return nil
	})
}

// syncGroups adopts the master's subscription groups when their version
// differs.
func (s *slaveSync) syncGroups(master string) error {
	var w protocol.SubscriptionGroupWrapper
	if err := s.fetch(master, protocol.GetAllSubscriptionGroupConfig, &w); err != nil {
		return err
	}
	changed, err := s.groups.adopt(w.SubscriptionGroupTable, DataVersion{Timestamp: w.DataVersion.Timestamp, Counter: w.DataVersion.Counter})
	if changed {
		s.log.Info("broker: subscription groups copied from the master", "master", master, "groups", len(w.SubscriptionGroupTable))
	}
	return err
}

func (s *slaveSync) close() { s.rpc.close() }

// refusedCommit is an answer to UPDATE_CONSUMER_OFFSET that a retry would
// get again (checkOffsetCommit).
func refusedCommit(code protocol.ResponseCode) bool {
	return code == protocol.TopicNotExist || code == protocol.SubscriptionGroupNotExist || code == protocol.InvalidParameter
}
