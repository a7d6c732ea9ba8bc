package txn

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// halfRef is one half message read back: its half queue offset and record.
type halfRef struct {
	k   int64
	rec record.Record
}

// readHalf reads the half message at commit-log offset phys and checks that
// it is half k (k < 0: any).
func (s *Service) readHalf(k, phys int64) (halfRef, error) {
	// One read of most records: up to 2 KiB, within the log handed to
	// the backend and the segment; else (what follows the record is not
	// readable yet, or a blank filler declares more than it wrote) the
	// header first.
	st := s.cfg.Store
	seg := st.SegmentSize()
	guess := min(int64(2048), st.HandedOffset()-phys, (phys/seg+1)*seg-phys)
	buf, err := st.ReadAt(phys, int32(max(guess, 8)))
	if err != nil {
		if buf, err = st.ReadAt(phys, 8); err != nil {
			return halfRef{}, err
		}
	}
	size, _, err := record.Header(buf)
	if err != nil {
		return halfRef{}, err
	}
	if int64(size) <= int64(len(buf)) {
		buf = buf[:size]
	} else if buf, err = st.ReadAt(phys, size); err != nil {
		return halfRef{}, err
	}
	h := halfRef{}
	if err := record.Decode(buf, phys, &h.rec); err != nil {
		return halfRef{}, err
	}
	if string(h.rec.Topic) != HalfTopic || (k >= 0 && h.rec.QueueOffset != k) {
		return halfRef{}, fmt.Errorf("the record at %d is %s/%d, not half message %d", phys, h.rec.Topic, h.rec.QueueOffset, k)
	}
	h.k = h.rec.QueueOffset
	return h, nil
}

// realTarget returns a half's real topic and queue.
func realTarget(r *record.Record) (string, int32, error) {
	props := r.UserProperties()
	t, ok := record.LookupProperty(props, propRealTopic)
	q, ok2 := record.LookupProperty(props, propRealQueueID)
	if !ok || !ok2 {
		return "", 0, fmt.Errorf("half message %d has no %s/%s", r.QueueOffset, propRealTopic, propRealQueueID)
	}
	n, err := strconv.ParseInt(string(q), 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("half message %d: %s %q", r.QueueOffset, propRealQueueID, q)
	}
	return string(t), int32(n), nil
}

// finalMessage is the committed message of half h (RocketMQ's
// EndTransactionProcessor.endMessageTransaction).
func (s *Service) finalMessage(h *halfRef) (*storage.Message, error) {
	topic, queue, err := realTarget(&h.rec)
	if err != nil {
		return nil, err
	}
	props := withoutProps(h.rec.UserProperties(), propRealTopic, propRealQueueID, PropTranPrepared, propCheckTimes)
	props = record.AppendProperty(props, propPreparedQueueOff, strconv.FormatInt(h.k, 10))
	return &storage.Message{
		Topic: topic, QueueID: queue, Flag: h.rec.Flag,
		SysFlag:    h.rec.SysFlag&^(record.TransactionRollback|record.FlagBornHostV6|record.FlagStoreHostV6) | record.TransactionCommit,
		Body:       h.rec.Body,
		Properties: props, TagsCode: record.TagsCodeOf(props),
		BornTimestamp: h.rec.BornTimestamp, BornHost: h.rec.BornHost, StoreHost: s.cfg.StoreHost(),
		ReconsumeTimes: h.rec.ReconsumeTimes, PreparedTxOffset: h.rec.PhysOffset,
	}, nil
}

// opMessage is the op record that settles half k.
func (s *Service) opMessage(k int64) *storage.Message {
	props := record.AppendProperty(nil, record.PropertyTags, opTag)
	return &storage.Message{Topic: OpHalfTopic, Body: []byte(strconv.FormatInt(k, 10)), Properties: props,
		TagsCode: record.TagsCodeOf(props), BornTimestamp: s.cfg.Now().UnixMilli(), BornHost: s.cfg.StoreHost(), StoreHost: s.cfg.StoreHost()}
}

// discardMessage is half h's copy in TRANS_CHECK_MAX_TIME_TOPIC.
func (s *Service) discardMessage(h *halfRef) *storage.Message {
	return &storage.Message{Topic: CheckMaxTimeTopic, Flag: h.rec.Flag,
		SysFlag: h.rec.SysFlag &^ (record.FlagBornHostV6 | record.FlagStoreHostV6), Body: h.rec.Body,
		Properties: h.rec.UserProperties(), TagsCode: record.TagsCodeOf(h.rec.UserProperties()),
		BornTimestamp: h.rec.BornTimestamp, BornHost: h.rec.BornHost, StoreHost: s.cfg.StoreHost(), ReconsumeTimes: h.rec.ReconsumeTimes}
}

// Settlements.
const (
	settleCommit = iota
	settleRollback
	settleDiscard
	settleOpOnly // the final message is there already (a crash mid-commit)
)

// settle writes the settlement of claimed halves in one Config.Append:
// every final (or discarded) message, then every op record. kinds[i] is
// hs[i]'s settlement. On failure the halves are open again.
func (s *Service) settle(hs []halfRef, kinds []int) ([]storage.AppendResult, error) {
	msgs := make([]*storage.Message, 0, 2*len(hs))
	fail := func(err error) ([]storage.AppendResult, error) {
		for _, h := range hs {
			s.state().settled(h.k, -1)
		}
		return nil, err
	}
	for i := range hs {
		switch kinds[i] {
		case settleCommit:
			m, err := s.finalMessage(&hs[i])
			if err != nil {
				return fail(err)
			}
			msgs = append(msgs, m)
		case settleDiscard:
			msgs = append(msgs, s.discardMessage(&hs[i]))
		}
	}
	first := len(msgs)
	for _, h := range hs {
		msgs = append(msgs, s.opMessage(h.k))
	}
	res, errs, err := s.cfg.Append(msgs)
	if err != nil && !(errors.Is(err, storage.ErrFlushTimeout) && len(res) == len(msgs)) && errs == nil {
		return fail(err)
	}
	for i, h := range hs {
		switch {
		case errs == nil || errs[first+i] == nil:
			s.state().settled(h.k, res[first+i].QueueOffset)
		case kinds[i] == settleCommit && errs[finalAt(kinds, i)] == nil:
			// The final message is stored, its op record is not: the
			// check service completes the commit (as after a crash).
			s.state().reopenToSearch(h.k)
		default:
			s.state().settled(h.k, -1)
		}
	}
	if errs != nil {
		return nil, err
	}
	return res, err
}

// finalAt is the index, among a settlement's messages, of half i's final
// (or discarded) message.
func finalAt(kinds []int, i int) int {
	n := 0
	for _, k := range kinds[:i] {
		if k == settleCommit || k == settleDiscard {
			n++
		}
	}
	return n
}

// finalStored reports whether half h's final message is in its real queue
// already: a crash after the final message and before the op record of one
// commit (the package doc's "Crash mid-commit"). It reads the real queue
// from a second before the half's store time.
func (s *Service) finalStored(h *halfRef) bool {
	topic, queue, err := realTarget(&h.rec)
	if err != nil {
		return false
	}
	st := s.cfg.Store
	off := st.OffsetByTime(topic, queue, h.rec.StoreTimestamp-1000)
	for end := st.MaxQueueOffset(topic, queue); off < end; {
		res, err := st.GetMessages(topic, queue, off, 64, 0, nil)
		if len(res.Records) == 0 {
			if err != nil && res.NextOffset > off {
				off = res.NextOffset
				continue
			}
			return false
		}
		for _, rec := range res.Records {
			var r record.Record
			if record.DecodeUnchecked(rec, &r) == nil && r.PreparedTxOffset == h.rec.PhysOffset &&
				record.TransactionType(r.SysFlag) == record.TransactionCommit {
				return true
			}
		}
		off = res.NextOffset
	}
	return false
}

// ToHalf turns a prepared send into its half message (the package doc's
// "Half messages"); group is the send's producer group. The broker calls
// it on a send that IsPrepared, after checking its real topic and queue.
func ToHalf(m *storage.Message, group string) {
	props := make([]byte, 0, len(m.Properties)+len(m.Topic)+64)
	props = append(props, m.Properties...)
	if n := len(props); n > 0 && props[n-1] != record.PropertySeparator {
		props = append(props, record.PropertySeparator)
	}
	if _, ok := record.LookupProperty(m.Properties, PropProducerGroup); !ok && group != "" {
		props = record.AppendProperty(props, PropProducerGroup, group)
	}
	props = record.AppendProperty(props, propRealTopic, m.Topic)
	props = record.AppendProperty(props, propRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Properties = props
	m.Topic, m.QueueID = HalfTopic, 0
	m.SysFlag &^= record.TransactionRollback
}

// IsPrepared reports whether a send is a transaction's half message:
// sysflag TRANSACTION_PREPARED or property TRAN_MSG=true.
func IsPrepared(sysFlag int32, props []byte) bool {
	if record.TransactionType(sysFlag) == record.TransactionPrepared {
		return true
	}
	if !bytes.Contains(props, []byte(PropTranPrepared+"\x01")) {
		return false
	}
	v, _ := record.LookupProperty(props, PropTranPrepared)
	return string(v) == "true"
}
