package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/record"
)

// openTxn rebuilds the transaction state of a master from the progress
// offsets and the op queue (txn.go, "Progress"). New calls it after the
// store opened, before anything is served.
func (b *Broker) openTxn() error {
	st := b.store
	base, ok := b.offsets.query(transProgressGroup, TransHalfTopic, 0)
	if !ok {
		base = 0
	}
	base = max(base, st.MinQueueOffset(TransHalfTopic, 0))
	t := newTxnState(base, st.MaxQueueOffset(TransHalfTopic, 0))
	opFrom, ok := b.offsets.query(transProgressGroup, TransOpHalfTopic, 0)
	if !ok {
		opFrom = 0
	}
	opFrom = max(opFrom, st.MinQueueOffset(TransOpHalfTopic, 0))
	end := st.MaxQueueOffset(TransOpHalfTopic, 0)
	ops, open := 0, 0
	for off := opFrom; off < end; {
		res, err := st.GetMessages(TransOpHalfTopic, 0, off, 256, 0, nil)
		if err != nil && len(res.Records) == 0 {
			var ce *storage.CorruptRecordError
			if errors.As(err, &ce) && res.NextOffset > off {
				b.log.Warn("broker: a corrupt op record is skipped; its half message may be checked back again", "offset", off, "err", err)
				off = res.NextOffset
				continue
			}
			return fmt.Errorf("broker: read the transaction op queue at %d: %w", off, err)
		}
		if len(res.Records) == 0 {
			break
		}
		for i, rec := range res.Records {
			var r record.Record
			err := record.DecodeUnchecked(rec, &r)
			var k int64
			if err == nil {
				k, err = opHalfOffset(r.Body)
			}
			if err != nil {
				b.log.Warn("broker: op record ignored", "offset", res.QueueOffsets[i], "err", err)
				continue
			}
			if k >= base {
				t.settled(k, res.QueueOffsets[i])
				ops++
			}
		}
		off = res.NextOffset
	}
	var counts map[string]int
	// An unreadable file is set aside (jsonfile_load.go): open half
	// messages then start their check count afresh.
	if _, found := b.txnChecksFile().loadTolerant(func(raw []byte) error { return json.Unmarshal(raw, &counts) }); !found {
		counts = nil
	}
	t.loadCheckCounts(counts)
	b.txn = t
	for k := base; k < t.startHalfMax; k++ {
		if t.state(k) == txnOpen {
			open++
		}
	}
	if open > 0 || ops > 0 {
		b.log.Info("broker: transactions recovered", "halfProgress", base, "opFrom", opFrom, "settledAbove", ops, "open", open)
	}
	return nil
}

// halfRef is one half message read back: its half queue offset and record.
type halfRef struct {
	k   int64
	rec record.Record
}

// readHalf reads the half message at commit-log offset phys and checks that
// it is half k (k < 0: any).
func (b *Broker) readHalf(k, phys int64) (halfRef, error) {
	// One read of most records: up to 2 KiB, within the log handed to
	// the backend and the segment; else (what follows the record is not
	// readable yet, or a blank filler declares more than it wrote) the
	// header first.
	seg := b.store.SegmentSize()
	guess := min(int64(2048), b.store.HandedOffset()-phys, (phys/seg+1)*seg-phys)
	buf, err := b.store.ReadAt(phys, int32(max(guess, 8)))
	if err != nil {
		if buf, err = b.store.ReadAt(phys, 8); err != nil {
			return halfRef{}, err
		}
	}
	size, _, err := record.Header(buf)
	if err != nil {
		return halfRef{}, err
	}
	if int64(size) <= int64(len(buf)) {
		buf = buf[:size]
	} else if buf, err = b.store.ReadAt(phys, size); err != nil {
		return halfRef{}, err
	}
	h := halfRef{}
	if err := record.Decode(buf, phys, &h.rec); err != nil {
		return halfRef{}, err
	}
	if string(h.rec.Topic) != TransHalfTopic || (k >= 0 && h.rec.QueueOffset != k) {
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
func (b *Broker) finalMessage(h *halfRef) (*storage.Message, error) {
	topic, queue, err := realTarget(&h.rec)
	if err != nil {
		return nil, err
	}
	props := withoutProps(h.rec.UserProperties(), propRealTopic, propRealQueueID, propTranPrepared, propCheckTimes)
	props = record.AppendProperty(props, propPreparedQueueOff, strconv.FormatInt(h.k, 10))
	return &storage.Message{
		Topic: topic, QueueID: queue, Flag: h.rec.Flag,
		SysFlag:    h.rec.SysFlag&^(record.TransactionRollback|record.FlagBornHostV6|record.FlagStoreHostV6) | record.TransactionCommit,
		Body:       h.rec.Body,
		Properties: props, TagsCode: record.TagsCodeOf(props),
		BornTimestamp: h.rec.BornTimestamp, BornHost: h.rec.BornHost, StoreHost: b.storeHost,
		ReconsumeTimes: h.rec.ReconsumeTimes, PreparedTxOffset: h.rec.PhysOffset,
	}, nil
}

// opMessage is the op record that settles half k.
func (b *Broker) opMessage(k int64) *storage.Message {
	props := record.AppendProperty(nil, record.PropertyTags, transOpTag)
	return &storage.Message{Topic: TransOpHalfTopic, Body: []byte(strconv.FormatInt(k, 10)), Properties: props,
		TagsCode: record.TagsCodeOf(props), BornTimestamp: b.cfg.Clock().UnixMilli(), BornHost: b.storeHost, StoreHost: b.storeHost}
}

// discardMessage is half h's copy in TRANS_CHECK_MAX_TIME_TOPIC.
func (b *Broker) discardMessage(h *halfRef) *storage.Message {
	return &storage.Message{Topic: TransCheckMaxTimeTopic, Flag: h.rec.Flag,
		SysFlag: h.rec.SysFlag &^ (record.FlagBornHostV6 | record.FlagStoreHostV6), Body: h.rec.Body,
		Properties: h.rec.UserProperties(), TagsCode: record.TagsCodeOf(h.rec.UserProperties()),
		BornTimestamp: h.rec.BornTimestamp, BornHost: h.rec.BornHost, StoreHost: b.storeHost, ReconsumeTimes: h.rec.ReconsumeTimes}
}

// Settlements.
const (
	settleCommit = iota
	settleRollback
	settleDiscard
	settleOpOnly // the final message is there already (a crash mid-commit)
)

// settle writes the settlement of claimed halves in one AppendBatch:
// every final (or discarded) message, then every op record. kinds[i] is
// hs[i]'s settlement. On failure the halves are open again.
func (b *Broker) settle(hs []halfRef, kinds []int) ([]storage.AppendResult, error) {
	msgs := make([]*storage.Message, 0, 2*len(hs))
	fail := func(err error) ([]storage.AppendResult, error) {
		for _, h := range hs {
			b.txn.settled(h.k, -1)
		}
		return nil, err
	}
	for i := range hs {
		switch kinds[i] {
		case settleCommit:
			m, err := b.finalMessage(&hs[i])
			if err != nil {
				return fail(err)
			}
			msgs = append(msgs, m)
		case settleDiscard:
			msgs = append(msgs, b.discardMessage(&hs[i]))
		}
	}
	first := len(msgs)
	for _, h := range hs {
		msgs = append(msgs, b.opMessage(h.k))
	}
	res, errs, err := b.appendAll(msgs)
	if err != nil && !(errors.Is(err, storage.ErrFlushTimeout) && len(res) == len(msgs)) && errs == nil {
		return fail(err)
	}
	for i, h := range hs {
		switch {
		case errs == nil || errs[first+i] == nil:
			b.txn.settled(h.k, res[first+i].QueueOffset)
		case kinds[i] == settleCommit && errs[finalAt(kinds, i)] == nil:
			// The final message is stored, its op record is not: the
			// check service completes the commit (as after a crash).
			b.txn.reopenToSearch(h.k)
		default:
			b.txn.settled(h.k, -1)
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

// appendAll appends msgs in order: with the append combiner (not
// SYNC_FLUSH) among the concurrent sends, else in one AppendBatch. The
// combiner may split them over store batches, so each message has its own
// error (errs, nil when all were appended or with AppendBatch); err is the
// first.
func (b *Broker) appendAll(msgs []*storage.Message) (res []storage.AppendResult, errs []error, err error) {
	if b.appends == nil {
		res, err = b.store.AppendBatch(context.Background(), msgs)
		return res, nil, err
	}
	es := make([]*combineEntry, len(msgs))
	for i, m := range msgs {
		es[i] = b.appends.get(m)
	}
	b.appends.run(es)
	res = make([]storage.AppendResult, len(msgs))
	for i, e := range es {
		r, e := b.appends.finish(e)
		res[i] = r
		if e != nil && err == nil {
			err = e
			errs = make([]error, len(msgs))
		}
		if errs != nil {
			errs[i] = e
		}
	}
	return res, errs, err
}

// finalStored reports whether half h's final message is in its real queue
// already: a crash after the final message and before the op record of one
// commit (txn.go, "Crash mid-commit"). It reads the real queue from a
// second before the half's store time.
func (b *Broker) finalStored(h *halfRef) bool {
	topic, queue, err := realTarget(&h.rec)
	if err != nil {
		return false
	}
	st := b.store
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

// toHalf turns a prepared send into its half message (txn.go, "Half
// messages"); group is the send's producer group.
func (b *Broker) toHalf(m *storage.Message, group string) {
	props := make([]byte, 0, len(m.Properties)+len(m.Topic)+64)
	props = append(props, m.Properties...)
	if n := len(props); n > 0 && props[n-1] != record.PropertySeparator {
		props = append(props, record.PropertySeparator)
	}
	if _, ok := record.LookupProperty(m.Properties, propProducerGroup); !ok && group != "" {
		props = record.AppendProperty(props, propProducerGroup, group)
	}
	props = record.AppendProperty(props, propRealTopic, m.Topic)
	props = record.AppendProperty(props, propRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Properties = props
	m.Topic, m.QueueID = TransHalfTopic, 0
	m.SysFlag &^= record.TransactionRollback
}

// isPrepared reports whether a send is a transaction's half message.
func isPrepared(sysFlag int32, props []byte) bool {
	if record.TransactionType(sysFlag) == record.TransactionPrepared {
		return true
	}
	if !bytes.Contains(props, []byte(propTranPrepared+"\x01")) {
		return false
	}
	v, _ := record.LookupProperty(props, propTranPrepared)
	return string(v) == "true"
}
