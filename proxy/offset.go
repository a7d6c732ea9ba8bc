package proxy

import (
	"context"
	"errors"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/client"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// The offset calls of RocketMQ 5's pull consumer, queue by queue through
// package client's Admin. PullMessage itself is not served.

func queueOf(mq *pb.MessageQueue) (client.MessageQueue, *pb.Status) {
	q := client.MessageQueue{Topic: mq.GetTopic().GetName(), BrokerName: mq.GetBroker().GetName(), QueueID: int(mq.GetId())}
	switch {
	case q.Topic == "":
		return q, status(pb.Code_ILLEGAL_TOPIC, "no topic")
	case q.BrokerName == "" || q.QueueID < 0:
		return q, status(pb.Code_BAD_REQUEST, "the message queue names no broker and queue")
	}
	return q, nil
}

// GetOffset answers a group's committed offset of a queue.
func (s *Server) GetOffset(ctx context.Context, req *pb.GetOffsetRequest) (*pb.GetOffsetResponse, error) {
	q, st := queueOf(req.GetMessageQueue())
	if st == nil {
		st = s.allowedRead(ctx, req.GetGroup().GetName(), q.Topic)
	}
	if st != nil {
		return &pb.GetOffsetResponse{Status: st}, nil
	}
	off, err := s.admin.CommittedOffset(ctx, req.GetGroup().GetName(), q)
	if errors.Is(err, client.ErrNoOffset) {
		return &pb.GetOffsetResponse{Status: status(pb.Code_OFFSET_NOT_FOUND, err.Error())}, nil
	}
	if err != nil {
		return &pb.GetOffsetResponse{Status: errStatus(err)}, nil
	}
	return &pb.GetOffsetResponse{Status: ok(), Offset: off}, nil
}

// UpdateOffset commits a group's offset of a queue.
func (s *Server) UpdateOffset(ctx context.Context, req *pb.UpdateOffsetRequest) (*pb.UpdateOffsetResponse, error) {
	q, st := queueOf(req.GetMessageQueue())
	if st == nil {
		st = s.allowedRead(ctx, req.GetGroup().GetName(), q.Topic)
	}
	if st == nil && req.GetOffset() < 0 {
		st = status(pb.Code_ILLEGAL_OFFSET, "negative offset")
	}
	if st != nil {
		return &pb.UpdateOffsetResponse{Status: st}, nil
	}
	if err := s.admin.CommitOffset(ctx, req.GetGroup().GetName(), q, req.GetOffset()); err != nil {
		return &pb.UpdateOffsetResponse{Status: errStatus(err)}, nil
	}
	return &pb.UpdateOffsetResponse{Status: ok()}, nil
}

// QueryOffset answers a queue's first or next offset, or the first at a
// time.
func (s *Server) QueryOffset(ctx context.Context, req *pb.QueryOffsetRequest) (*pb.QueryOffsetResponse, error) {
	q, st := queueOf(req.GetMessageQueue())
	if st == nil {
		st = s.allowed(ctx, acl.TopicResource(q.Topic, acl.Sub))
	}
	if st != nil {
		return &pb.QueryOffsetResponse{Status: st}, nil
	}
	var off int64
	var err error
	switch req.GetQueryOffsetPolicy() {
	case pb.QueryOffsetPolicy_BEGINNING:
		off, _, err = s.admin.QueueRange(ctx, q)
	case pb.QueryOffsetPolicy_END:
		_, off, err = s.admin.QueueRange(ctx, q)
	case pb.QueryOffsetPolicy_TIMESTAMP:
		if req.Timestamp == nil {
			return &pb.QueryOffsetResponse{Status: status(pb.Code_BAD_REQUEST, "TIMESTAMP without a timestamp")}, nil
		}
		off, err = s.admin.SearchOffset(ctx, q, req.GetTimestamp().AsTime())
	default:
		return &pb.QueryOffsetResponse{Status: status(pb.Code_BAD_REQUEST, "unknown query offset policy")}, nil
	}
	if err != nil {
		return &pb.QueryOffsetResponse{Status: errStatus(err)}, nil
	}
	return &pb.QueryOffsetResponse{Status: ok(), Offset: off}, nil
}
