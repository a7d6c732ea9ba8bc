package broker

import (
	"sync"
	"time"
)

// DefaultLockMaxLive is how long a queue lock lives without renewal
// (RocketMQ's rocketmq.broker.rebalance.lockMaxLiveTime, 60 s). The orderly
// consumer renews its locks every 20 s.
const DefaultLockMaxLive = 60 * time.Second

// QueueKey names a message queue on this broker.
type QueueKey struct {
	Topic   string
	QueueID int32
}

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// lockManager holds the orderly consumer's queue locks (RocketMQ's
// RebalanceLockManager): per group, a queue is locked by one client id
// until it unlocks or the lock is older than maxLive. Safe for concurrent
// use; the caller passes the time.
type lockManager struct {
	maxLive time.Duration
	mu      struct {
		sync.Mutex
		groups map[string]map[QueueKey]*lockEntry
	}
}

func newLockManager(maxLive time.Duration) *lockManager {
	m := &lockManager{maxLive: maxLive}
	m.mu.groups = make(map[string]map[QueueKey]*lockEntry)
	return m
}

// tryLock locks every queue of mqs it can for clientID (free, expired, or
// already clientID's) and returns those it holds.
func (m *lockManager) tryLock(group, clientID string, mqs []QueueKey, now time.Time) []QueueKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.mu.groups[group]
	if g == nil {
		if len(m.mu.groups) >= MaxGroups {
			m.sweepLocked(now)
		}
		if len(m.mu.groups) >= MaxGroups {
			return nil // as many groups hold live locks as there may be groups
		}
		g = make(map[QueueKey]*lockEntry)
		m.mu.groups[group] = g
	}
	var ok []QueueKey
	for _, q := range mqs {
		e := g[q]
		switch {
		case e == nil || now.Sub(e.lastUpdate) > m.maxLive:
			g[q] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID:
			e.lastUpdate = now
		default:
			continue
		}
		ok = append(ok, q)
	}
	return ok
}

// sweepLocked drops expired locks, and groups left without any: the table
// of a group whose consumers went away is otherwise never emptied.
func (m *lockManager) sweepLocked(now time.Time) {
	for name, g := range m.mu.groups {
		for q, e := range g {
			if now.Sub(e.lastUpdate) > m.maxLive {
				delete(g, q)
			}
		}
		if len(g) == 0 {
			delete(m.mu.groups, name)
		}
	}
}

// unlock releases the queues of mqs that clientID holds.
func (m *lockManager) unlock(group, clientID string, mqs []QueueKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.mu.groups[group]
	for _, q := range mqs {
		if e := g[q]; e != nil && e.clientID == clientID {
			delete(g, q)
		}
	}
	if len(g) == 0 {
		delete(m.mu.groups, group)
	}
}

// holder returns who holds a queue's lock and whether it is live.
func (m *lockManager) holder(group string, q QueueKey, now time.Time) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.mu.groups[group][q]
	if e == nil || now.Sub(e.lastUpdate) > m.maxLive {
		return "", false
	}
	return e.clientID, true
}
