package broker

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/samsamq/samsa/ha"
)

// The replication link (package ha) wired into the broker: a master (ASYNC
// or SYNC) runs an ha.Master on haListenPort that every slave of its group
// follows; a SLAVE runs an ha.Slave that follows the master the name server
// (or haMasterAddress) names. Both sides keep the epoch file in
// <storePathRootDir>/ha/epochs.

// haMaster adapts *ha.Master to the broker's replicator.
type haMaster struct{ m *ha.Master }

func (h haMaster) WaitReplicated(end int64) error { return haError(h.m.WaitReplicated(end)) }

// WaitReplicatedFunc hands fn package ha's error as it is (no wrapping
// closure per send): the broker's callback maps it (replicaOutcome).
func (h haMaster) WaitReplicatedFunc(end int64, fn func(error)) (bool, error) {
	done, err := h.m.WaitReplicatedFunc(end, fn)
	return done, haError(err)
}

// haError maps package ha's errors to the broker's.
func haError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ha.ErrSlaveTimeout):
		return errSlaveTimeout
	case errors.Is(err, ha.ErrSlaveNotAvailable):
		return errSlaveNotAvailable
	default:
		return err
	}
}

func (h haMaster) Slaves() []SlaveStatus {
	src := h.m.Slaves()
	out := make([]SlaveStatus, len(src))
	for i, s := range src {
		out[i] = SlaveStatus{Addr: s.Addr, BrokerID: s.BrokerID, AckOffset: s.AckOffset, Behind: s.LagBytes,
			LagTime: s.LagTime, InSync: s.InSync, Since: s.Since}
	}
	return out
}

// epochPath is where the broker keeps its replication epochs.
func (r *Replication) epochPath() string {
	return filepath.Join(r.cfg.StorePathRootDir, "ha", "epochs")
}

func (r *Replication) openEpochs() (*ha.EpochFile, error) {
	if err := r.cfg.FS.MkdirAll(filepath.Dir(r.epochPath())); err != nil {
		return nil, fmt.Errorf("broker: replication epochs: %w", err)
	}
	return ha.OpenEpochFile(r.cfg.FS, r.epochPath(), r.log)
}

// startHAMaster opens a master's replication listener and its new epoch.
// It runs in New, before the broker takes its first send: the epoch must
// start where the recovered log ends.
func (r *Replication) startHAMaster() error {
	epochs, err := r.openEpochs()
	if err != nil {
		return err
	}
	m, err := r.newHAMaster(epochs, 0)
	if err != nil {
		return err
	}
	r.haMaster = m
	r.setReplicator(haMaster{m})
	return nil
}

// newHAMaster listens on the replication port and starts an ha.Master
// that opens epoch in epochs (0: the static roles' rule, one above the
// history). The first listener with haListenPort 0 picks a free port; later
// ones (controller mode: each time the broker becomes master) reuse it.
func (r *Replication) newHAMaster(epochs *ha.EpochFile, epoch uint64) (*ha.Master, error) {
	c := r.cfg
	port := int(r.haPort.Load())
	if port == 0 {
		port = c.HAListenPort
	}
	ln, err := r.listen(net.JoinHostPort(c.ListenAddr, strconv.Itoa(port)), "ha")
	if err != nil {
		return nil, fmt.Errorf("broker: replication listener: %w", err)
	}
	if r.ctl == nil { // controller mode: the listener changes at runtime; not counted
		r.haListener(ln)
	}
	m, err := ha.NewMaster(ha.MasterConfig{
		Listener:             ln,
		Accept:               r.accept,
		Log:                  r.store,
		Epochs:               epochs,
		Epoch:                epoch,
		InSyncReplicas:       c.SlaveAcksNeeded() + 1, // ha counts the master
		AckTimeout:           c.HASlaveAckTimeout,
		TransferBatchSize:    c.HATransferBatchSize,
		MaxGapNotInSync:      c.HAMaxGapNotInSync,
		HeartbeatInterval:    c.HASendHeartbeatInterval,
		HousekeepingInterval: c.HAHousekeepingInterval,
		Logger:               r.log,
		AdminSecret:          r.adminSecret, // nil with ACL off
		OnAuthRefused:        r.authRefused,
		OnLinkDown:           r.onHALinkDown,
		// Controller mode: only the sync-state set's acknowledgements
		// count (the replicas an election may choose).
		RequiredOnly: r.ctl != nil,
	})
	if err != nil {
		_ = ln.Close() // nothing accepted on it yet
		return nil, fmt.Errorf("broker: replication listener: %w", err)
	}
	r.setHAPort(m.Addr().(*net.TCPAddr).Port)
	return m, nil
}

// startHASlave starts a slave's link. It follows HAMasterAddr, which the
// first registration may only just have learned; until an address is
// known the link retries with back-off.
func (r *Replication) startHASlave() error {
	epochs, err := r.openEpochs()
	if err != nil {
		return err
	}
	s, err := r.newHASlave(epochs)
	if err != nil {
		return err
	}
	r.haSlave.Store(s)
	return nil
}

func (r *Replication) newHASlave(epochs *ha.EpochFile) (*ha.Slave, error) {
	c := r.cfg
	sc := ha.SlaveConfig{
		MasterAddr:           r.HAMasterAddr,
		BrokerID:             c.BrokerID,
		Addr:                 r.addr(),
		Log:                  r.store,
		Epochs:               epochs,
		FromLastSegment:      !c.HAFullCopy,
		AckFlushed:           c.HASlaveAckFlushed,
		HeartbeatInterval:    c.HASendHeartbeatInterval,
		HousekeepingInterval: c.HAHousekeepingInterval,
		Fault:                c.HAFault,
		TLS:                  r.tlsClient,
		Logger:               r.log,
		AccessKey:            c.AccessKey,
		SecretKey:            c.SecretKey,
		OnCut: func(_, _, acknowledged int64) {
			r.cutAcknowledged.Add(acknowledged)
		},
	}
	if r.ctl != nil {
		sc.Acked = r.ctl.acked
		sc.MayCutAcked = r.ctl.mayCutAcked
	}
	s, err := ha.NewSlave(sc)
	if err != nil {
		return nil, fmt.Errorf("broker: replication link: %w", err)
	}
	return s, nil
}

// LinkStatus is a slave's replication link as it stands (zero on a
// master).
func (r *Replication) LinkStatus() ha.LinkStatus {
	s := r.slaveLink()
	if s == nil {
		return ha.LinkStatus{}
	}
	return s.Status()
}

// slaveLink is a slave's replication link (nil on a master, and before
// it starts).
func (r *Replication) slaveLink() *ha.Slave {
	if r.ctl != nil {
		return r.ctl.slaveLink()
	}
	return r.haSlave.Load()
}

// kickHASlave tells a slave's replication link that its master's address
// changed: a link waiting out a back-off dials now.
func (r *Replication) kickHASlave() {
	if s := r.slaveLink(); s != nil {
		s.Kick()
	}
}

// close stops the metadata sync's client, then the replication link,
// before the store closes (the broker's loops have ended).
func (r *Replication) close() {
	if r.meta != nil {
		r.meta.close()
	}
	if r.ctl != nil {
		r.ctl.close()
	}
	// Shutting down: ha.Slave's Close reports nothing, ha.Master's only its
	// listener's close.
	if s := r.haSlave.Load(); s != nil {
		_ = s.Close()
	}
	if r.haMaster != nil {
		_ = r.haMaster.Close()
	}
}
