package broker

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/samsamq/samsa/storage"

	"github.com/samsamq/samsa/internal/netx"
)

// The replication wiring (Replication, ha.go) is built here from what the
// broker has; it never holds the *Broker.

// openReplication builds the broker's replication wiring in New, once the
// store, the offsets and the registrar are there. In controller mode the
// controller decides the role (controller_mode.go). A SLAVE's link starts
// with Start: it follows an address the first registration may only then
// learn. A master opens its link here, before the broker takes its first
// send: the new epoch must start where the recovered log ends. A slave,
// and a controller-mode replica, copy their master's tables
// (slave_sync.go).
func (b *Broker) openReplication() error {
	c := &b.cfg
	r := &Replication{replDeps: replDeps{
		cfg:        c,
		store:      b.store,
		log:        b.log,
		addr:       b.Addr,
		listen:     b.listen,
		haListener: func(ln *netx.Listener) { b.net.haLn = ln },
		accept: func(nc net.Conn) (net.Conn, error) {
			nc, _, err := b.tlsAccept(nc)
			return nc, err
		},
		tlsClient:         b.net.tlsClient,
		adminSecret:       b.acl.adminSecret(),
		authRefused:       b.acl.haRefused(),
		slaveNotAvailable: &b.stats.slaveNotAvailable,
		slaveTimeouts:     &b.stats.slaveTimeouts,
		slaveRefused:      &b.stats.slaveRefused,
		cutAcknowledged:   &b.stats.cutAcknowledged,
		stop:              b.stop,
		registerNow:       func() { b.goLoop(func() { b.reg.registerAll(false) }) },
		resyncState: func() error {
			if b.txn == nil { // read now: it opens after this (never with brokerRole SLAVE)
				return nil
			}
			// Both rebuild from queues of the log: what replication
			// brought must be in them first.
			if err := awaitIndexed(b.store, b.stop); err != nil {
				// Rebuilt from what is indexed; a record indexed
				// later is a half or op the check-back meets.
				b.log.Warn("broker: transactions rebuilt before the whole log is indexed", "err", err)
			}
			if err := b.txn.Resync(); err != nil {
				return err
			}
			if err := b.xa.Resync(); err != nil {
				return fmt.Errorf("rebuild the XA branches: %w", err)
			}
			if b.pop != nil { // POP groups go on from what the last master committed
				if err := b.pop.Resync(); err != nil {
					return fmt.Errorf("catch POP up with the committed offsets: %w", err)
				}
			}
			return nil
		},
		dropLocalOffsets: b.offsets.DropLocal,
	}}
	b.repl = r
	if c.EnableControllerMode {
		if err := r.openControllerMode(); err != nil { // controller_mode.go
			return err
		}
	} else if c.BrokerRole != Slave {
		if err := r.startHAMaster(); err != nil && !isDiskFull(err) {
			return err
		} else if err != nil {
			// The new epoch cannot be recorded: no slave may follow a log
			// whose epochs are unknown, and the store takes no writes anyway.
			b.log.Warn("broker: disk full at start: the replication epoch cannot be written; this master runs without "+
				"its replication link until a restart with free space (a SYNC_MASTER answers SLAVE_NOT_AVAILABLE)", "err", err)
		}
	}
	if c.EnableControllerMode || c.BrokerRole == Slave {
		// Copies the master's tables while this replica is not master.
		// Delayed delivery opens after this, hence the closures.
		r.meta = newSlaveSync(slaveSyncDeps{
			log: b.log, clock: c.Clock, interval: c.SlaveSyncInterval, stop: b.stop,
			rpc:    newRPCClient(c.MaxFrameSize, b.net.tlsClient).signedBy(c.AccessKey, c.SecretKey),
			topics: b.topics, groups: b.groups, offsets: b.offsets,
			topicsChanged:        b.reg.topicsChanged,
			adoptDelayOffsets:    func(body []byte) error { return b.delay.AdoptOffsets(body) },
			adoptTimerCheckpoint: func(body []byte) error { return b.delay.AdoptTimerCheckpoint(body) },
			isSlave:              r.isSlave,
			masterAddr:           r.MasterAddr,
			addr:                 b.Addr,
			controllerMode:       c.EnableControllerMode,
			pageBytes:            b.ans.limit(),
		})
		b.store.OnDispatch(r.meta.onDispatch) // a replicated record of an unknown queue: copy the tables now
	}
	return nil
}

// Replication is the broker's replication wiring, for callers outside the
// package: its slaves, its HA address, the master it follows and, in
// controller mode, its role, master epoch and sync-state set.
func (b *Broker) Replication() *Replication { return b.repl }

// awaitIndexed waits until every record the store holds is in its
// queue (the dispatcher runs behind the log), for at most 30 seconds.
func awaitIndexed(st *storage.Store, stop <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for st.DispatchedOffset() < st.WrittenOffset() {
		if time.Now().After(deadline) {
			return fmt.Errorf("broker: the log is indexed to %d of %d after 30 s", st.DispatchedOffset(), st.WrittenOffset())
		}
		select {
		case <-stop:
			return errors.New("broker: stopping")
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
