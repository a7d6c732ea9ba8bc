package txn

import (
	"errors"
	"strconv"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// round scans the open half messages from the progress offset, in store
// order, up to the first one younger than Config.Timeout. Each open one
// older than that (and than its CHECK_IMMUNITY_TIME_IN_SECONDS) is, in
// this order: settled with its op record alone if a crash left its final
// message stored (the package doc's "Crash mid-commit"); discarded to
// TRANS_CHECK_MAX_TIME_TOPIC after Config.CheckMax check-backs, or when
// older than Config.FileReserved; else checked back with one
// CHECK_TRANSACTION_STATE to a live member of its producer group. A round
// with no member online counts as a check too, as in RocketMQ: so a half
// stays open at most about Timeout + CheckMax × CheckInterval (7.5 minutes
// by default), which bounds the state's window. Then the progress moves
// over the settled prefix and is committed as ProgressGroup's offsets.
// A closed stop ends the scan early.
func (s *Service) round(stop <-chan struct{}) {
	t, st, log := s.state(), s.cfg.Store, s.cfg.Logger
	now := s.cfg.Now()
	t.advance(st.MaxQueueOffset(OpHalfTopic, 0))
	end := st.MaxQueueOffset(HalfTopic, 0)
	minOff := st.MinQueueOffset(HalfTopic, 0)
	for _, k := range t.openBelow(end, checkBatch) {
		if stopped(stop) {
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
		res, err := st.GetMessages(HalfTopic, 0, k, 1, 0, nil)
		if len(res.Records) == 0 || res.QueueOffsets[0] != k {
			var ce *storage.CorruptRecordError
			if errors.As(err, &ce) && t.claim(k) {
				log.Warn("broker: a corrupt half message cannot be checked back; it is dropped", "offset", k, "err", err)
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
		if age < s.cfg.Timeout {
			break // the rest are younger still
		}
		if v, ok := record.LookupProperty(h.rec.UserProperties(), propCheckImmunity); ok {
			if n, err := strconv.Atoi(string(v)); err == nil && age < time.Duration(n)*time.Second {
				continue
			}
		}
		if s.cfg.Hold != nil && s.cfg.Hold(h.rec.UserProperties()) {
			continue // its owner settles it (an XA branch)
		}
		if t.needsSearch(k) && s.finalStored(&h) {
			if t.claim(k) {
				log.Info("broker: a commit cut short by a crash is completed: its final message is stored, its op record is added", "half", k)
				_, _ = s.settle([]halfRef{h}, []int{settleOpOnly})
			}
			continue
		}
		if n := t.checksOf(k); n >= s.cfg.CheckMax || (s.cfg.FileReserved > 0 && age > s.cfg.FileReserved) {
			if t.claim(k) {
				topic, _, _ := realTarget(&h.rec)
				uniq, _ := record.LookupProperty(h.rec.UserProperties(), propUniqKey)
				log.Warn("broker: half message discarded to "+CheckMaxTimeTopic+" after its check-backs", "half", k,
					"topic", topic, "msgId", string(uniq), "checks", n, "age", age.Round(time.Second))
				_, _ = s.settle([]halfRef{h}, []int{settleDiscard})
			}
			continue
		}
		s.sendCheck(&h)
		t.addCheck(k) // sent or not, as RocketMQ: an open half lives a bounded time
	}
	base, opFrom := t.advance(st.MaxQueueOffset(OpHalfTopic, 0))
	s.cfg.Progress.Commit(HalfTopic, base)
	s.cfg.Progress.Commit(OpHalfTopic, opFrom)
	if counts := t.checkCounts(); counts != nil {
		if err := s.checksFile().Save(counts); err != nil {
			log.Warn("broker: transaction check counts not saved; a restart may check some half messages more often", "err", err)
		}
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// sendCheck sends CHECK_TRANSACTION_STATE for half h to one live member of
// its producer group, the first that takes it (RocketMQ's
// AbstractTransactionalMessageCheckListener.sendCheckMessage): the header
// names the half, the body is the half message as stored but with its real
// topic and queue.
func (s *Service) sendCheck(h *halfRef) bool {
	props := h.rec.UserProperties()
	group, _ := record.LookupProperty(props, PropProducerGroup)
	peers := s.cfg.Producers(string(group))
	if len(peers) == 0 {
		s.cfg.Logger.Debug("broker: no producer of the group is online to check a half message back", "group", string(group), "half", h.k)
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
		MsgID: string(uniq), TransactionID: string(txID), OffsetMsgID: protocol.OffsetMsgID(s.cfg.StoreHost(), h.rec.PhysOffset),
		BrokerName: s.cfg.BrokerName}
	for _, p := range peers {
		if p.RequestOneway(protocol.NewRequest(protocol.CheckTransactionState, hdr.Encode(), body)) {
			return true
		}
	}
	return false
}
