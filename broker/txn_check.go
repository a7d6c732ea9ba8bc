package broker

import (
	"errors"
	"path/filepath"
	"strconv"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// txnCheckLoop is the master's check service (RocketMQ's
// TransactionalMessageCheckService): every transactionCheckInterval it runs
// one check round. It owns nothing but its timer; it ends when the broker
// stops.
func (b *Broker) txnCheckLoop() {
	t := time.NewTicker(b.cfg.TransactionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			if b.isSlave() { // a controller-mode broker not master now: its log takes only the master's
				continue
			}
			b.txnCheckRound()
		}
	}
}

// txnCheckRound scans the open half messages from the progress offset, in
// store order, up to the first one younger than transactionTimeout. Each
// open one older than that (and than its CHECK_IMMUNITY_TIME_IN_SECONDS)
// is, in this order: settled with its op record alone if a crash left its
// final message stored (txn.go); discarded to TRANS_CHECK_MAX_TIME_TOPIC
// after transactionCheckMax check-backs, or when older than
// fileReservedTime; else checked back with one CHECK_TRANSACTION_STATE to
// a live member of its producer group. A round with no member online
// counts as a check too, as in RocketMQ: so a half stays open at most
// about transactionTimeout + transactionCheckMax × transactionCheckInterval
// (7.5 minutes by default), which bounds txnState's window. Then the
// progress moves over the settled prefix and is committed as
// CID_RMQ_SYS_TRANS's offsets.
func (b *Broker) txnCheckRound() {
	t, st := b.txn, b.store
	now := b.cfg.Clock()
	t.advance(st.MaxQueueOffset(TransOpHalfTopic, 0))
	end := st.MaxQueueOffset(TransHalfTopic, 0)
	reserved := time.Duration(b.cfg.FileReservedTime) * time.Hour
	minOff := st.MinQueueOffset(TransHalfTopic, 0)
	for _, k := range t.openBelow(end, txnCheckBatch) {
		if b.closing.Load() {
			break
		}
		if t.state(k) != txnOpen { // settled since the list was taken
			continue
		}
		if k < minOff { // retention took it
			if t.claim(k) {
				t.settled(k, txnDropped)
			}
			continue
		}
		res, err := st.GetMessages(TransHalfTopic, 0, k, 1, 0, nil)
		if len(res.Records) == 0 || res.QueueOffsets[0] != k {
			var ce *storage.CorruptRecordError
			if errors.As(err, &ce) && t.claim(k) {
				b.log.Warn("broker: a corrupt half message cannot be checked back; it is dropped", "offset", k, "err", err)
				t.settled(k, txnDropped)
			}
			continue
		}
		var h halfRef
		if err := record.DecodeUnchecked(res.Records[0], &h.rec); err != nil {
			continue
		}
		h.k = k
		age := now.Sub(time.UnixMilli(h.rec.StoreTimestamp))
		if age < b.cfg.TransactionTimeout {
			break // the rest are younger still
		}
		if v, ok := record.LookupProperty(h.rec.UserProperties(), propCheckImmunity); ok {
			if s, err := strconv.Atoi(string(v)); err == nil && age < time.Duration(s)*time.Second {
				continue
			}
		}
		if t.needsSearch(k) && b.finalStored(&h) {
			if t.claim(k) {
				b.log.Info("broker: a commit cut short by a crash is completed: its final message is stored, its op record is added", "half", k)
				_, _ = b.settle([]halfRef{h}, []int{settleOpOnly})
			}
			continue
		}
		if n := t.checksOf(k); n >= b.cfg.TransactionCheckMax || (reserved > 0 && age > reserved) {
			if t.claim(k) {
				topic, _, _ := realTarget(&h.rec)
				uniq, _ := record.LookupProperty(h.rec.UserProperties(), propUniqKey)
				b.log.Warn("broker: half message discarded to "+TransCheckMaxTimeTopic+" after its check-backs", "half", k,
					"topic", topic, "msgId", string(uniq), "checks", n, "age", age.Round(time.Second))
				_, _ = b.settle([]halfRef{h}, []int{settleDiscard})
			}
			continue
		}
		b.sendCheck(&h)
		t.addCheck(k) // sent or not, as RocketMQ: an open half lives a bounded time
	}
	base, opFrom := t.advance(st.MaxQueueOffset(TransOpHalfTopic, 0))
	b.offsets.commitSystem(transProgressGroup, TransHalfTopic, 0, base)
	b.offsets.commitSystem(transProgressGroup, TransOpHalfTopic, 0, opFrom)
	if counts := t.checkCounts(); counts != nil {
		if err := b.txnChecksFile().save(counts); err != nil {
			b.log.Warn("broker: transaction check counts not saved; a restart may check some half messages more often", "err", err)
		}
	}
}

// txnChecksFile holds the check counts of open half messages.
func (b *Broker) txnChecksFile() jsonFile {
	return jsonFile{fs: b.cfg.FS, path: filepath.Join(b.cfg.ConfigDir(), "transactionChecks.json"), rep: b.fileReport()}
}

// txnCheckBatch bounds the open half messages one check round looks at
// (the oldest; the rest wait for the next round).
const txnCheckBatch = 100_000

// checkPeer is a producer connection that takes a broker's request.
type checkPeer interface {
	requestOneway(cmd *protocol.Command) bool
}

// requestOneway queues a one-way request to the client, unless its write
// queue is full.
func (c *conn) requestOneway(cmd *protocol.Command) bool {
	cmd.MarkOneway()
	cmd.Opaque = c.opaque.Add(1)
	return c.trySend(outFrame{cmd: cmd})
}

// producers returns group's producer connections.
func (m *clientManager) producers(group string) []peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]peer, 0, len(m.mu.producers[group]))
	for p := range m.mu.producers[group] {
		out = append(out, p)
	}
	return out
}

// sendCheck sends CHECK_TRANSACTION_STATE for half h to one live member of
// its producer group (RocketMQ's
// AbstractTransactionalMessageCheckListener.sendCheckMessage): the header
// names the half, the body is the half message as stored but with its real
// topic and queue.
func (b *Broker) sendCheck(h *halfRef) bool {
	props := h.rec.UserProperties()
	group, _ := record.LookupProperty(props, propProducerGroup)
	peers := b.clients.producers(string(group))
	if len(peers) == 0 {
		b.log.Debug("broker: no producer of the group is online to check a half message back", "group", string(group), "half", h.k)
		return false
	}
	f := h.rec.Fields()
	topic, queue, err := realTarget(&h.rec)
	if err != nil {
		return false
	}
	f.Topic, f.QueueID = topic, queue
	n, err := f.Size()
	if err != nil {
		return false
	}
	body := make([]byte, n)
	if _, err := record.Encode(body, &f); err != nil {
		return false
	}
	uniq, _ := record.LookupProperty(props, propUniqKey)
	txID, ok := record.LookupProperty(props, propTransactionID)
	if !ok {
		txID = uniq
	}
	hdr := &protocol.CheckTransactionStateRequestHeader{Topic: topic, TranStateTableOffset: h.k, CommitLogOffset: h.rec.PhysOffset,
		MsgID: string(uniq), TransactionID: string(txID), OffsetMsgID: offsetMsgIDs(b.storeHost, []storage.AppendResult{{PhysicalOffset: h.rec.PhysOffset}}),
		BrokerName: b.cfg.BrokerName}
	for _, p := range peers {
		if cp, ok := p.(checkPeer); ok && cp.requestOneway(protocol.NewRequest(protocol.CheckTransactionState, hdr.Encode(), body)) {
			return true
		}
	}
	return false
}
