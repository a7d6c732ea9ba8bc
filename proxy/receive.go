package proxy

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/samsamq/samsa/acl"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// popMax is the most one POP hands out; minInvisible the shortest
// invisible time the brokers take.
const (
	popMax       = 32
	minInvisible = 100 * time.Millisecond
)

// ReceiveMessage pops up to batch_size messages for the group, holding
// the call up to its long-polling timeout when there are none. The
// stream is RocketMQ's proxy's: a status, then the messages, then the
// time of delivery.
func (s *Server) ReceiveMessage(req *pb.ReceiveMessageRequest, stream pb.MessagingService_ReceiveMessageServer) error {
	ctx := stream.Context()
	reply := func(st *pb.Status) error {
		return stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_Status{Status: st}})
	}
	group, topic := req.GetGroup().GetName(), req.GetMessageQueue().GetTopic().GetName()
	switch {
	case clientID(ctx) == "":
		return reply(status(pb.Code_CLIENT_ID_REQUIRED, "no x-mq-client-id"))
	case group == "":
		return reply(status(pb.Code_ILLEGAL_CONSUMER_GROUP, "no consumer group"))
	case topic == "":
		return reply(status(pb.Code_ILLEGAL_TOPIC, "no topic"))
	case !req.GetAutoRenew() && (req.InvisibleDuration == nil || req.GetInvisibleDuration().AsDuration() <= 0):
		return reply(status(pb.Code_ILLEGAL_INVISIBLE_TIME, "no invisible duration"))
	case req.GetBatchSize() < 1:
		return reply(status(pb.Code_BAD_REQUEST, fmt.Sprintf("batch size %d", req.GetBatchSize())))
	}
	if st := s.allowedRead(ctx, group, topic); st != nil {
		return reply(st)
	}
	f := req.GetFilterExpression()
	pc, err := s.popConsumer(group, topic, f.GetExpression(), f.GetType() == pb.FilterType_SQL)
	if err != nil {
		return reply(errStatus(err))
	}
	select {
	case s.receives <- struct{}{}:
		defer func() { <-s.receives }()
	default:
		return reply(status(pb.Code_TOO_MANY_REQUESTS, "too many receives held"))
	}
	poll := s.opts.LongPollMax
	if req.LongPollingTimeout != nil {
		poll = min(poll, max(req.GetLongPollingTimeout().AsDuration(), 0))
	}
	invisible := req.GetInvisibleDuration().AsDuration()
	if req.GetAutoRenew() || invisible <= 0 {
		// A push consumer asks the server to keep its messages invisible
		// while it works (auto_renew): the proxy does not renew, it gives
		// them DefaultInvisible, and the consumer's own nack or ack ends
		// that sooner.
		invisible = s.opts.DefaultInvisible
	}
	pctx, cancel := context.WithTimeout(ctx, poll)
	defer cancel()
	msgs, err := pc.Receive(pctx, min(int(req.GetBatchSize()), popMax), invisible)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if pctx.Err() != nil {
			return reply(status(pb.Code_MESSAGE_NOT_FOUND, "no new message"))
		}
		return reply(errStatus(err))
	}
	if len(msgs) == 0 {
		return reply(status(pb.Code_MESSAGE_NOT_FOUND, "no new message"))
	}
	if err := reply(ok()); err != nil {
		return err
	}
	for _, m := range msgs {
		pm := fromMessage(m.MessageExt, topic, makeHandle(m.CommitLogOffset, m.ReceiptHandle), invisible)
		if err := stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_Message{Message: pm}}); err != nil {
			return err
		}
	}
	return stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_DeliveryTimestamp{
		DeliveryTimestamp: timestamppb.New(time.Now())}})
}

// allowedRead checks subscribe rights on topic and group.
func (s *Server) allowedRead(ctx context.Context, group, topic string) *pb.Status {
	if st := s.allowed(ctx, acl.TopicResource(topic, acl.Sub)); st != nil {
		return st
	}
	return s.allowed(ctx, acl.Resource{Name: group, Group: true, Perm: acl.Sub})
}

// AckMessage acknowledges each entry by its receipt handle.
func (s *Server) AckMessage(ctx context.Context, req *pb.AckMessageRequest) (*pb.AckMessageResponse, error) {
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if st := s.allowedRead(ctx, group, topic); st != nil {
		return &pb.AckMessageResponse{Status: st}, nil
	}
	if len(req.GetEntries()) == 0 {
		return &pb.AckMessageResponse{Status: status(pb.Code_BAD_REQUEST, "no entries")}, nil
	}
	pc, err := s.popConsumer(group, topic, "", false)
	if err != nil {
		return &pb.AckMessageResponse{Status: errStatus(err)}, nil
	}
	out := make([]*pb.AckMessageResultEntry, len(req.GetEntries()))
	sts := make([]*pb.Status, len(out))
	// One BATCH_ACK_MESSAGE per broker for the well-formed handles.
	var handles []string
	var at []int
	for i, e := range req.GetEntries() {
		out[i] = &pb.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle()}
		if _, extra, good := parseHandle(e.GetReceiptHandle()); good {
			handles, at = append(handles, extra), append(at, i)
		} else {
			sts[i] = status(pb.Code_INVALID_RECEIPT_HANDLE, "malformed receipt handle")
		}
	}
	for j, err := range pc.AckReceipts(ctx, handles) {
		sts[at[j]] = ok()
		if err != nil {
			sts[at[j]] = errStatus(err)
		}
	}
	for i := range out {
		out[i].Status = sts[i]
	}
	return &pb.AckMessageResponse{Status: overall(sts), Entries: out}, nil
}

// ChangeInvisibleDuration makes a popped message invisible for the
// duration given from now, and answers its new receipt handle.
func (s *Server) ChangeInvisibleDuration(ctx context.Context, req *pb.ChangeInvisibleDurationRequest) (*pb.ChangeInvisibleDurationResponse, error) {
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if st := s.allowedRead(ctx, group, topic); st != nil {
		return &pb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	d := req.GetInvisibleDuration().AsDuration()
	if req.InvisibleDuration == nil || d < 0 {
		return &pb.ChangeInvisibleDurationResponse{Status: status(pb.Code_ILLEGAL_INVISIBLE_TIME, "no invisible duration")}, nil
	}
	// The brokers take 100 ms at least; a client asking for less (a nack
	// that wants the message back at once) gets that.
	d = max(d, minInvisible)
	cl, extra, good := parseHandle(req.GetReceiptHandle())
	if !good {
		return &pb.ChangeInvisibleDurationResponse{Status: status(pb.Code_INVALID_RECEIPT_HANDLE, "malformed receipt handle")}, nil
	}
	pc, err := s.popConsumer(group, topic, "", false)
	if err != nil {
		return &pb.ChangeInvisibleDurationResponse{Status: errStatus(err)}, nil
	}
	next, err := pc.ChangeInvisibleTimeReceipt(ctx, extra, d)
	if err != nil {
		return &pb.ChangeInvisibleDurationResponse{Status: errStatus(err)}, nil
	}
	return &pb.ChangeInvisibleDurationResponse{Status: ok(), ReceiptHandle: makeHandle(cl, next)}, nil
}

// ForwardMessageToDeadLetterQueue moves a popped message to the group's
// DLQ and acknowledges it (a push consumer does so after its last
// attempt).
func (s *Server) ForwardMessageToDeadLetterQueue(ctx context.Context, req *pb.ForwardMessageToDeadLetterQueueRequest) (*pb.ForwardMessageToDeadLetterQueueResponse, error) {
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if st := s.allowedRead(ctx, group, topic); st != nil {
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	cl, extra, good := parseHandle(req.GetReceiptHandle())
	if !good {
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: status(pb.Code_INVALID_RECEIPT_HANDLE, "malformed receipt handle")}, nil
	}
	pc, err := s.popConsumer(group, topic, "", false)
	if err != nil {
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: errStatus(err)}, nil
	}
	if err := pc.DeadLetterReceipt(ctx, extra, cl, req.GetMessageId()); err != nil {
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: errStatus(err)}, nil
	}
	return &pb.ForwardMessageToDeadLetterQueueResponse{Status: ok()}, nil
}
