package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// Transactions (RocketMQ's transaction messages, and more).
//
// A Transaction's messages are sent as half messages: stored by the
// broker but invisible to consumers until the transaction commits. Commit
// makes every one visible, Rollback none. One transaction may hold several
// messages, to any topics served by one broker (the broker of its first
// message); they carry the property SAMSA_TXN_ID and are ended by one
// END_TRANSACTION listing them all, which the broker settles in one
// write. When the end is lost (the producer or the broker crashed) the
// broker checks back: it asks a live producer of the group about each
// open half message, and TransactionProducer answers for the transaction
// id, so all the transaction's messages get the same answer — from its own
// memory for transactions it ended or still runs, else from the
// TransactionChecker. A transaction of one message is what RocketMQ's own
// brokers and clients know (SendInTransaction with one message works
// against them too).

// TransactionState is a local transaction's outcome.
type TransactionState int

const (
	// TransactionUnknown leaves the messages open; the broker checks
	// back later.
	TransactionUnknown TransactionState = iota
	// TransactionCommit delivers every message of the transaction.
	TransactionCommit
	// TransactionRollback delivers none.
	TransactionRollback
)

func (s TransactionState) String() string {
	switch s {
	case TransactionCommit:
		return "COMMIT"
	case TransactionRollback:
		return "ROLLBACK"
	}
	return "UNKNOWN"
}

// wire returns the END_TRANSACTION commitOrRollback value.
func (s TransactionState) wire() int32 {
	switch s {
	case TransactionCommit:
		return protocol.TransactionCommit
	case TransactionRollback:
		return protocol.TransactionRollback
	}
	return protocol.TransactionNotType
}

// Transaction properties.
const (
	PropertyTransactionPrepared = "TRAN_MSG"
	// PropertyTransactionID is Samsa's: the transaction a half message
	// belongs to.
	PropertyTransactionID = "SAMSA_TXN_ID"
)

// ErrTransactionUnconfirmed: the broker did not confirm the end of a
// transaction (it may or may not have applied it). The producer
// remembers its decision and answers the broker's check-back with it, so
// the transaction still ends as decided while the producer (or the
// TransactionChecker) can answer.
var ErrTransactionUnconfirmed = errors.New("client: end of transaction not confirmed by the broker; its check-back will settle it")

// TransactionChecker answers a check-back for a transaction the producer
// does not remember (ended by another process, or before a restart): m is
// one of its messages. TransactionUnknown asks the broker to check again
// later.
type TransactionChecker func(ctx context.Context, txnID string, m *MessageExt) TransactionState

// A producer remembers a transaction it ended, to answer check-backs
// itself, for rememberTxn (a lost end is checked back after the broker's
// transactionTimeout, 6 s, within a transactionCheckInterval, 30 s), and
// at most rememberMax of them (some 30 MiB); older ones are the
// TransactionChecker's to answer.
const (
	rememberTxn = 5 * time.Minute
	rememberMax = 1 << 18
)

// TransactionOptions configure a TransactionProducer beyond its
// ProducerOptions.
type TransactionOptions struct {
	// Checker answers check-backs for transactions the producer does not
	// remember (nil: they stay unknown, and the broker discards them
	// after transactionCheckMax check-backs).
	Checker TransactionChecker
	// ConfirmEnd sends END_TRANSACTION two-way: Commit and Rollback
	// return once the broker applied the decision (or
	// ErrTransactionUnconfirmed). Default false: one-way, as RocketMQ's
	// clients do, a round trip less per transaction; an end lost in
	// flight is settled by the check-back, which the producer answers
	// from its memory of its decisions.
	ConfirmEnd bool
	// CheckOpen sends the check-backs of transactions begun and not yet
	// ended to the Checker too, instead of answering them unknown: for a
	// gateway (package proxy) whose transactions are decided by its own
	// clients. Default false.
	CheckOpen bool
}

// TransactionProducer is a Producer that also sends transactions and
// answers the brokers' check-backs. Safe for concurrent use.
type TransactionProducer struct {
	*Producer
	checker   TransactionChecker
	confirm   bool
	checkOpen bool

	mu struct {
		sync.Mutex
		running map[string]bool        // transactions begun, not ended: check-backs answer unknown
		ended   map[string]txnDecision // recently ended, by id
		beaten  map[string]bool        // broker addresses heartbeated since a first send there
		order   []string               // ended ids, oldest first, for expiry
	}
}

type txnDecision struct {
	state TransactionState
	at    time.Time
}

// NewTransactionProducer returns a running TransactionProducer.
func NewTransactionProducer(opts ProducerOptions, txo TransactionOptions) (*TransactionProducer, error) {
	tp := &TransactionProducer{checker: txo.Checker, confirm: txo.ConfirmEnd, checkOpen: txo.CheckOpen}
	tp.mu.running = map[string]bool{}
	tp.mu.ended = map[string]txnDecision{}
	tp.mu.beaten = map[string]bool{}
	p, err := newProducer(opts, tp.onRequest)
	if err != nil {
		return nil, err
	}
	tp.Producer = p
	return tp, nil
}

// Transaction is one transaction of a TransactionProducer: Send its
// messages, then Commit, Rollback or LeaveOpen (the broker checks back
// and the TransactionChecker answers). Until one of them, check-backs of
// the transaction are answered "unknown". Not safe for concurrent use.
type Transaction struct {
	tp      *TransactionProducer
	id      string
	broker  string // every message goes to this broker
	addr    string
	halves  [][2]int64 // half queue offset, commit-log offset
	results []*SendResult
	ended   bool
}

// Begin starts a transaction.
func (tp *TransactionProducer) Begin() *Transaction {
	tx := &Transaction{tp: tp, id: tp.ids.next()}
	tp.mu.Lock()
	tp.mu.running[tx.id] = true
	tp.mu.Unlock()
	return tx
}

// ID is the transaction's id (the SAMSA_TXN_ID property of its messages).
func (tx *Transaction) ID() string { return tx.id }

// Send stores m as a half message of the transaction. The first message
// chooses the broker; later ones must have a writable queue there.
func (tx *Transaction) Send(ctx context.Context, m *Message) (*SendResult, error) {
	p := tx.tp.Producer
	if tx.ended {
		return nil, errors.New("client: transaction ended")
	}
	if err := p.checkHalf(m, "a transaction"); err != nil {
		return nil, err
	}
	ctx, cancel := p.sendContext(ctx)
	defer cancel()
	r, err := p.writeRoute(ctx, m.Topic)
	if err != nil {
		return nil, err
	}
	var q MessageQueue
	if tx.broker == "" {
		q = p.pick(m, r, "")
		tx.broker, tx.addr = q.BrokerName, r.masterAddr(q.BrokerName)
	} else {
		var err error
		if q, err = p.queueOn(r, m, tx.broker, ", where this transaction's messages go"); err != nil {
			return nil, err
		}
	}
	tx.tp.heartbeatOnce(ctx, tx.addr)
	half := halfMessage(m, p.opts.Group, PropertyTransactionID, tx.id)
	uniq := p.uniqID(&half)
	start := p.opts.Clock()
	req := p.request(&half, q, uniq, start)
	req.Header.(*protocol.SendMessageRequestHeaderV2).SysFlag |= record.TransactionPrepared
	resp, err := p.in.rc.Invoke(ctx, tx.addr, req)
	var res *SendResult
	if err == nil {
		res, err = result(tx.addr, q, uniq, resp)
	}
	p.note(q.BrokerName, start, err)
	if res != nil { // stored, even with a flush or replication timeout
		phys, perr := offsetOfMsgID(res.OffsetMsgID)
		if perr != nil {
			return nil, perr
		}
		tx.halves = append(tx.halves, [2]int64{res.QueueOffset, phys})
		tx.results = append(tx.results, res)
	}
	return res, err
}

// offsetOfMsgID reads the commit-log offset out of an offsetMsgId (its
// last 16 hex digits).
func offsetOfMsgID(id string) (int64, error) {
	if len(id) < 32 {
		return 0, fmt.Errorf("client: offsetMsgId %q too short", id)
	}
	u, err := strconv.ParseUint(id[len(id)-16:], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("client: offsetMsgId %q: %w", id, err)
	}
	return int64(u), nil
}

// Commit delivers every message of the transaction, all or none (on a
// crash mid-commit, the broker's check-back completes it). Without
// ConfirmEnd it returns once the end is sent.
func (tx *Transaction) Commit(ctx context.Context) error { return tx.end(ctx, TransactionCommit) }

// Rollback drops every message of the transaction.
func (tx *Transaction) Rollback(ctx context.Context) error { return tx.end(ctx, TransactionRollback) }

// LeaveOpen ends the transaction here without a decision: the broker's
// check-backs go to the TransactionChecker.
func (tx *Transaction) LeaveOpen() { _ = tx.end(context.Background(), TransactionUnknown) }

// end decides the transaction and tells the broker with one
// END_TRANSACTION (two-way with ConfirmEnd: its answer is the
// confirmation).
func (tx *Transaction) end(ctx context.Context, s TransactionState) error {
	if tx.ended {
		return errors.New("client: transaction ended")
	}
	tx.ended = true
	tx.tp.decided(tx.id, s)
	if len(tx.halves) == 0 || s == TransactionUnknown {
		return nil
	}
	p := tx.tp.Producer
	ctx, cancel := p.sendContext(ctx)
	defer cancel()
	h := protocol.EndTransactionRequestHeader{ProducerGroup: p.opts.Group, TranStateTableOffset: tx.halves[0][0],
		CommitLogOffset: tx.halves[0][1], CommitOrRollback: s.wire(), MsgID: tx.results[0].MsgID, TransactionID: tx.id,
		BrokerName: tx.broker}
	var body []byte
	if len(tx.halves) > 1 {
		var b strings.Builder
		for _, hv := range tx.halves {
			fmt.Fprintf(&b, "%d:%d\n", hv[0], hv[1])
		}
		body = []byte(b.String())
	}
	req := protocol.NewRequest(protocol.EndTransaction, nil, body)
	req.Header = &h
	if !tx.tp.confirm {
		if err := p.in.rc.InvokeOneway(ctx, tx.addr, req); err != nil {
			return fmt.Errorf("%w: %s to %s: %w", ErrTransactionUnconfirmed, s, tx.broker, err)
		}
		return nil
	}
	resp, err := p.in.rc.Invoke(ctx, tx.addr, req)
	if err != nil {
		return fmt.Errorf("%w: %s to %s: %w", ErrTransactionUnconfirmed, s, tx.broker, err)
	}
	if resp.Code != protocol.Success {
		return fmt.Errorf("%w: %w", ErrTransactionUnconfirmed, responseError(tx.addr, resp))
	}
	return nil
}

// Results are the send results of the transaction's messages so far.
func (tx *Transaction) Results() []*SendResult { return tx.results }

// SendInTransaction runs one transaction: it sends msgs as half messages,
// runs local (the local transaction; it sees the Transaction), and ends
// the transaction as local answers. A failed send rolls back what was
// sent and returns the error without running local; an error from local
// rolls back. It returns the messages' results and the outcome.
func (tp *TransactionProducer) SendInTransaction(ctx context.Context, local func(ctx context.Context, tx *Transaction) (TransactionState, error),
	msgs ...*Message) ([]*SendResult, TransactionState, error) {
	tx := tp.Begin()
	for _, m := range msgs {
		if _, err := tx.Send(ctx, m); err != nil {
			return tx.results, TransactionRollback, errors.Join(err, tx.Rollback(ctx))
		}
	}
	s, err := local(ctx, tx)
	if err != nil {
		return tx.results, TransactionRollback, errors.Join(err, tx.Rollback(ctx))
	}
	return tx.results, s, tx.end(ctx, s)
}

// decided records a transaction's outcome for check-backs.
func (tp *TransactionProducer) decided(id string, s TransactionState) {
	now := tp.opts.Clock()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	delete(tp.mu.running, id)
	if s == TransactionUnknown {
		return
	}
	tp.mu.ended[id] = txnDecision{state: s, at: now}
	tp.mu.order = append(tp.mu.order, id)
	n := 0
	for n < len(tp.mu.order) && (len(tp.mu.order)-n > rememberMax || now.Sub(tp.mu.ended[tp.mu.order[n]].at) > rememberTxn) {
		delete(tp.mu.ended, tp.mu.order[n])
		n++
	}
	tp.mu.order = tp.mu.order[n:]
}

// stateOf answers a check-back of transaction id.
func (tp *TransactionProducer) stateOf(ctx context.Context, id string, m *MessageExt) TransactionState {
	tp.mu.Lock()
	running := tp.mu.running[id]
	d, ok := tp.mu.ended[id]
	tp.mu.Unlock()
	switch {
	case running && tp.checkOpen && tp.checker != nil:
		return tp.checker(ctx, id, m)
	case running:
		return TransactionUnknown
	case ok:
		return d.state
	case tp.checker != nil:
		return tp.checker(ctx, id, m)
	}
	return TransactionUnknown
}

// heartbeatOnce heartbeats at once the first time the producer sends a
// transaction to a broker: the broker must know the group's members to
// check back.
func (tp *TransactionProducer) heartbeatOnce(ctx context.Context, addr string) {
	tp.mu.Lock()
	done := tp.mu.beaten[addr]
	tp.mu.beaten[addr] = true
	tp.mu.Unlock()
	if !done {
		tp.heartbeat(ctx)
	}
}

// onRequest serves the brokers' requests: CHECK_TRANSACTION_STATE (39),
// one-way, answered by a one-way END_TRANSACTION for the half message
// checked (nothing while the answer is unknown).
func (tp *TransactionProducer) onRequest(addr string, req *protocol.Command) *protocol.Command {
	if req.Code != protocol.CheckTransactionState || tp.Producer == nil {
		return nil
	}
	var h protocol.CheckTransactionStateRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil
	}
	msgs, err := decodeMessages(req.Body, h.BrokerName)
	if err != nil || len(msgs) == 0 {
		tp.opts.Logger.Warn("client: a check-back without its message", "broker", addr, "err", err)
		return nil
	}
	m := msgs[0]
	id := m.Property(PropertyTransactionID)
	if id == "" {
		id = m.MsgID
	}
	ctx, cancel := context.WithTimeout(context.Background(), tp.opts.SendTimeout)
	defer cancel()
	s := tp.stateOf(ctx, id, m)
	if s == TransactionUnknown {
		return nil
	}
	e := protocol.EndTransactionRequestHeader{ProducerGroup: tp.opts.Group, TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset: h.CommitLogOffset, CommitOrRollback: s.wire(), FromTransactionCheck: true, MsgID: m.MsgID, TransactionID: id,
		BrokerName: h.BrokerName}
	if err := tp.in.rc.InvokeOneway(ctx, addr, protocol.NewRequest(protocol.EndTransaction, e.Encode(), nil)); err != nil {
		tp.opts.Logger.Warn("client: answer to a check-back not sent", "broker", addr, "txn", id, "err", err)
	}
	return nil
}

// checkHalf checks m as a half message of what ("a transaction", "an XA
// branch"): the producer open, the message valid, no delay level.
func (p *Producer) checkHalf(m *Message, what string) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := validateMessage(m, p.opts.MaxBodySize); err != nil {
		return err
	}
	if m.DelayLevel > 0 {
		return fmt.Errorf("%w: %s message has no delay level", ErrMessageIllegal, what)
	}
	return nil
}

// queueOn picks m's queue among r's writable queues on broker (why ends
// the error when there is none).
func (p *Producer) queueOn(r *topicRoute, m *Message, broker, why string) (MessageQueue, error) {
	var qs []MessageQueue
	for _, wq := range r.write {
		if wq.BrokerName == broker {
			qs = append(qs, wq)
		}
	}
	if len(qs) == 0 {
		return MessageQueue{}, fmt.Errorf("%w: topic %s has no writable queue on broker %s%s", ErrNoRoute, m.Topic, broker, why)
	}
	return qs[p.opts.Balancer.Select(m.ShardingKey, qs)], nil
}

// halfMessage is a copy of m marked as a half message of group, carrying
// key=value (its transaction's id or its XA branch).
func halfMessage(m *Message, group, key, value string) Message {
	half := *m
	half.Properties = make(map[string]string, len(m.Properties)+3)
	for k, v := range m.Properties {
		half.Properties[k] = v
	}
	half.Properties[PropertyTransactionPrepared] = "true"
	half.Properties[PropertyProducerGroup] = group
	half.Properties[key] = value
	return half
}
