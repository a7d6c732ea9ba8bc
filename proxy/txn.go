package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/client"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// txns are the transactions begun by SendMessage and not yet ended, by
// id, and the check-backs waiting for a client's answer.
type txns struct {
	mu struct {
		sync.Mutex
		open    map[string]*openTxn
		waiting map[string]chan pb.TransactionResolution // check-backs relayed, by transaction id
	}
	max  int
	keep time.Duration
}

type openTxn struct {
	tx       *client.Transaction
	clientID string // who sent it: its telemetry stream gets the check-backs
	topic    string
	at       time.Time
}

func (t *txns) init(max int, keep time.Duration) {
	t.max, t.keep = max, keep
	t.mu.open = map[string]*openTxn{}
	t.mu.waiting = map[string]chan pb.TransactionResolution{}
}

// add keeps tx; false when MaxTransactions are open. When full, it first
// lets go of transactions held longer than TransactionKeep (their
// producer is gone: the brokers' check-backs, relayed to any producer of
// the topic, or their check limit settle them).
func (t *txns) add(tx *client.Transaction, clientID, topic string) bool {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.mu.open) >= t.max {
		for id, o := range t.mu.open {
			if now.Sub(o.at) > t.keep {
				o.tx.LeaveOpen()
				delete(t.mu.open, id)
			}
		}
	}
	if len(t.mu.open) >= t.max {
		return false
	}
	t.mu.open[tx.ID()] = &openTxn{tx: tx, clientID: clientID, topic: topic, at: now}
	return true
}

// take removes and returns transaction id (nil when not open).
func (t *txns) take(id string) *openTxn {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.mu.open[id]
	delete(t.mu.open, id)
	return o
}

func (t *txns) peek(id string) (clientID, topic string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.mu.open[id]
	if o == nil {
		return "", "", false
	}
	return o.clientID, o.topic, true
}

// wait registers a check-back of id waiting for its answer.
func (t *txns) wait(id string) chan pb.TransactionResolution {
	ch := make(chan pb.TransactionResolution, 1)
	t.mu.Lock()
	t.mu.waiting[id] = ch
	t.mu.Unlock()
	return ch
}

func (t *txns) unwait(id string, ch chan pb.TransactionResolution) {
	t.mu.Lock()
	if t.mu.waiting[id] == ch {
		delete(t.mu.waiting, id)
	}
	t.mu.Unlock()
}

// answer hands r to a check-back of id waiting for it; false when none.
func (t *txns) answer(id string, r pb.TransactionResolution) bool {
	t.mu.Lock()
	ch := t.mu.waiting[id]
	delete(t.mu.waiting, id)
	t.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- r
	return true
}

// EndTransaction commits or rolls back a transaction the proxy holds, or
// answers a check-back it relayed for a transaction it no longer holds.
func (s *Server) EndTransaction(ctx context.Context, req *pb.EndTransactionRequest) (*pb.EndTransactionResponse, error) {
	id := req.GetTransactionId()
	if id == "" {
		return &pb.EndTransactionResponse{Status: status(pb.Code_INVALID_TRANSACTION_ID, "no transaction id")}, nil
	}
	r := req.GetResolution()
	if r != pb.TransactionResolution_COMMIT && r != pb.TransactionResolution_ROLLBACK {
		return &pb.EndTransactionResponse{Status: status(pb.Code_BAD_REQUEST, "resolution is neither COMMIT nor ROLLBACK")}, nil
	}
	if st := s.allowed(ctx, acl.TopicResource(req.GetTopic().GetName(), acl.Pub)); st != nil {
		return &pb.EndTransactionResponse{Status: st}, nil
	}
	o := s.txns.take(id)
	if o == nil {
		if s.txns.answer(id, r) {
			return &pb.EndTransactionResponse{Status: ok()}, nil
		}
		return &pb.EndTransactionResponse{Status: status(pb.Code_INVALID_TRANSACTION_ID, "no open transaction "+id)}, nil
	}
	var err error
	if r == pb.TransactionResolution_COMMIT {
		err = o.tx.Commit(ctx)
	} else {
		err = o.tx.Rollback(ctx)
	}
	// A check-back waiting for this answer has nothing left to say: the
	// end just sent settles the transaction.
	s.txns.answer(id, pb.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED)
	if err != nil {
		return &pb.EndTransactionResponse{Status: errStatus(err)}, nil
	}
	return &pb.EndTransactionResponse{Status: ok()}, nil
}

// checkBack answers a broker's check of transaction id: it sends a
// RecoverOrphanedTransactionCommand to the producer that sent it (or,
// for a transaction the proxy no longer holds, to a producer of the
// topic) and waits for that producer's EndTransaction until ctx ends.
func (s *Server) checkBack(ctx context.Context, id string, m *client.MessageExt) client.TransactionState {
	cid, topic, held := s.txns.peek(id)
	if !held {
		topic = m.Property(client.PropertyRealTopic)
		if topic == "" {
			topic = m.Topic
		}
	}
	sess := s.sessions.producerFor(cid, topic)
	if sess == nil {
		return client.TransactionUnknown
	}
	msg := fromMessage(m, topic, "", 0)
	msg.SystemProperties.MessageType = pb.MessageType_TRANSACTION
	ch := s.txns.wait(id)
	defer s.txns.unwait(id, ch)
	cmd := &pb.TelemetryCommand{Command: &pb.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &pb.RecoverOrphanedTransactionCommand{Message: msg, TransactionId: id}}}
	if !sess.send(cmd) {
		return client.TransactionUnknown
	}
	select {
	case r := <-ch:
		switch r {
		case pb.TransactionResolution_COMMIT:
			return client.TransactionCommit
		case pb.TransactionResolution_ROLLBACK:
			return client.TransactionRollback
		}
	case <-ctx.Done():
	}
	return client.TransactionUnknown
}
