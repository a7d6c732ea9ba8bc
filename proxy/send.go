package proxy

import (
	"context"
	"fmt"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/client"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// SendMessage sends each message by the proxy's producer: a FIFO
// message's group is its sharding key (the producer's HashModulo picks
// the queue by its hash), a delivery timestamp becomes TIMER_DELIVER_MS,
// and a transactional message is the half message of a new transaction
// the proxy holds until EndTransaction.
func (s *Server) SendMessage(ctx context.Context, req *pb.SendMessageRequest) (*pb.SendMessageResponse, error) {
	if len(req.GetMessages()) == 0 {
		return &pb.SendMessageResponse{Status: status(pb.Code_BAD_REQUEST, "no messages")}, nil
	}
	entries := make([]*pb.SendResultEntry, len(req.GetMessages()))
	sts := make([]*pb.Status, len(entries))
	for i, m := range req.GetMessages() {
		e := s.sendOne(ctx, m)
		entries[i], sts[i] = e, e.Status
	}
	return &pb.SendMessageResponse{Status: overall(sts), Entries: entries}, nil
}

func (s *Server) sendOne(ctx context.Context, m *pb.Message) *pb.SendResultEntry {
	sp := m.GetSystemProperties()
	e := &pb.SendResultEntry{MessageId: sp.GetMessageId()}
	topic := m.GetTopic().GetName()
	switch {
	case topic == "":
		e.Status = status(pb.Code_ILLEGAL_TOPIC, "no topic")
	case sp.GetMessageId() == "":
		e.Status = status(pb.Code_ILLEGAL_MESSAGE_ID, "no message id")
	case len(m.GetBody()) == 0:
		e.Status = status(pb.Code_MESSAGE_BODY_EMPTY, "empty body")
	case len(m.GetBody()) > s.opts.MaxMessageSize:
		e.Status = status(pb.Code_MESSAGE_BODY_TOO_LARGE, fmt.Sprintf("body of %d bytes, at most %d", len(m.GetBody()), s.opts.MaxMessageSize))
	case sp.GetMessageType() == pb.MessageType_FIFO && sp.GetMessageGroup() == "":
		e.Status = status(pb.Code_ILLEGAL_MESSAGE_GROUP, "a FIFO message without a message group")
	case sp.GetMessageType() == pb.MessageType_TRANSACTION && sp.DeliveryTimestamp != nil:
		e.Status = status(pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a transactional message has no delivery time")
	}
	if e.Status != nil {
		return e
	}
	if st := s.allowed(ctx, acl.TopicResource(topic, acl.Pub)); st != nil {
		e.Status = st
		return e
	}
	cm := toMessage(m)
	if sp.GetMessageType() == pb.MessageType_TRANSACTION {
		return s.sendHalf(ctx, cm, e)
	}
	res, err := s.tp.Send(ctx, cm)
	if err != nil {
		e.Status = errStatus(err)
		return e
	}
	e.Status, e.Offset = ok(), res.QueueOffset
	return e
}

// sendHalf begins a transaction of the one message and keeps it for
// EndTransaction and the broker's check-backs.
func (s *Server) sendHalf(ctx context.Context, cm *client.Message, e *pb.SendResultEntry) *pb.SendResultEntry {
	tx := s.tp.Begin()
	if !s.txns.add(tx, clientID(ctx), cm.Topic) {
		tx.LeaveOpen()
		e.Status = status(pb.Code_TOO_MANY_REQUESTS, "too many open transactions")
		return e
	}
	res, err := tx.Send(ctx, cm)
	if err != nil {
		if t := s.txns.take(tx.ID()); t != nil {
			_ = t.tx.Rollback(ctx) // nothing was stored, or what was must not stay
		}
		e.Status = errStatus(err)
		return e
	}
	e.Status, e.Offset, e.TransactionId = ok(), res.QueueOffset, tx.ID()
	return e
}
