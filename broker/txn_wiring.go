package broker

import (
	"net/netip"
	"time"

	"github.com/samsamq/samsa/broker/offsets"
	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/protocol"
)

// Transactions live in package broker/txn; this file is their wiring.

// Transactions' system topics and the properties the broker names too
// (package txn has them all).
const (
	TransHalfTopic         = txn.HalfTopic
	TransOpHalfTopic       = txn.OpHalfTopic
	TransCheckMaxTimeTopic = txn.CheckMaxTimeTopic
	// PropSamsaTransaction (ours): the transaction id shared by the half
	// messages of one transaction of Samsa's client.
	PropSamsaTransaction = txn.PropSamsaTransaction
	transProgressGroup   = txn.ProgressGroup

	// propUniqKey is a message's client-side id (MessageConst
	// PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), which the dashboard
	// looks messages up by.
	propUniqKey = "UNIQ_KEY"
)

// openTxn rebuilds a master's transaction state (txn.New) from the check
// progress in the consumer offsets and the op queue. New calls it after
// the store opened, before anything is served; Start runs its check
// service.
func (b *Broker) openTxn() error {
	c := &b.cfg
	cfg := txn.Config{
		Store:         b.store,
		FS:            c.FS,
		ConfigDir:     c.ConfigDir(),
		Progress:      txnProgress{b.offsets},
		Timeout:       c.TransactionTimeout,
		CheckInterval: c.TransactionCheckInterval,
		CheckMax:      c.TransactionCheckMax,
		FileReserved:  time.Duration(c.FileReservedTime) * time.Hour,
		BrokerName:    c.BrokerName,
		StoreHost:     func() netip.AddrPort { return b.storeHost }, // known once Start listens
		Producers:     b.clients.checkProducers,
		Master:        func() bool { return !b.repl.isSlave() },
		Now:           c.Clock,
		Logger:        b.log,
		FilesSetAside: &b.stats.configSetAside,
	}
	if b.appends != nil { // not SYNC_FLUSH: settlements join the concurrent sends
		cfg.Append = b.appends.appendAll
	}
	var x *xa.Manager // set below, before any check round runs
	cfg.Hold = func(props []byte) bool { return x.Holds(props) }
	t, err := txn.New(cfg)
	if err != nil {
		return err
	}
	if x, err = openXA(c, t, b.store, b.log, func() netip.AddrPort { return b.storeHost }, replicaErr(b.repl), cfg.Master); err != nil {
		return err
	}
	b.txn, b.xa = t, x
	return nil
}

// txnProgress keeps the check progress as CID_RMQ_SYS_TRANS's consumer
// offsets on queue 0 of the half and op topics (consumerOffset.json).
type txnProgress struct{ t *offsets.Table }

func (p txnProgress) Query(topic string) (int64, bool) {
	return p.t.Query(transProgressGroup, topic, 0)
}
func (p txnProgress) Commit(topic string, off int64) {
	p.t.CommitSystem(transProgressGroup, topic, 0, off)
}

// checkProducers returns group's producer connections that take a
// broker's request: the ones a check-back may go to.
func (m *clientManager) checkProducers(group string) []txn.Producer {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]txn.Producer, 0, len(m.mu.producers[group]))
	for p := range m.mu.producers[group] {
		if tp, ok := p.(txn.Producer); ok {
			out = append(out, tp)
		}
	}
	return out
}

// RequestOneway queues a one-way request to the client, unless its write
// queue is full (txn.Producer: a check-back).
func (c *conn) RequestOneway(cmd *protocol.Command) bool {
	cmd.MarkOneway()
	cmd.Opaque = c.opaque.Add(1)
	return c.trySend(outFrame{cmd: cmd})
}
