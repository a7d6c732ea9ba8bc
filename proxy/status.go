package proxy

import (
	"context"
	"errors"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

func ok() *pb.Status { return &pb.Status{Code: pb.Code_OK, Message: "OK"} }

func status(c pb.Code, msg string) *pb.Status { return &pb.Status{Code: c, Message: msg} }

// errStatus maps an error of package client to the code a RocketMQ 5
// client understands.
func errStatus(err error) *pb.Status {
	var re *client.ResponseError
	switch {
	case errors.Is(err, errTooMany):
		return status(pb.Code_TOO_MANY_REQUESTS, err.Error())
	case errors.Is(err, client.ErrNoRoute):
		return status(pb.Code_TOPIC_NOT_FOUND, err.Error())
	case errors.Is(err, client.ErrMessageIllegal):
		return status(pb.Code_BAD_REQUEST, err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, client.ErrTimeout):
		return status(pb.Code_PROXY_TIMEOUT, err.Error())
	case errors.Is(err, client.ErrBrokerBusy):
		return status(pb.Code_TOO_MANY_REQUESTS, err.Error())
	case errors.As(err, &re):
		switch protocol.ResponseCode(re.Code) {
		case protocol.TopicNotExist:
			return status(pb.Code_TOPIC_NOT_FOUND, err.Error())
		case protocol.SubscriptionGroupNotExist:
			return status(pb.Code_CONSUMER_GROUP_NOT_FOUND, err.Error())
		case protocol.NoPermission:
			return status(pb.Code_FORBIDDEN, err.Error())
		case protocol.MessageIllegal:
			return status(pb.Code_BAD_REQUEST, err.Error())
		case protocol.NoMessage:
			return status(pb.Code_INVALID_RECEIPT_HANDLE, err.Error())
		}
	}
	return status(pb.Code_INTERNAL_SERVER_ERROR, err.Error())
}

// overall is a batch's status: OK when every entry is, the entry's own
// for one entry, else MULTIPLE_RESULTS.
func overall(sts []*pb.Status) *pb.Status {
	bad := 0
	var first *pb.Status
	for _, st := range sts {
		if st.Code != pb.Code_OK {
			bad++
			if first == nil {
				first = st
			}
		}
	}
	switch {
	case bad == 0:
		return ok()
	case len(sts) == 1:
		return first
	}
	return status(pb.Code_MULTIPLE_RESULTS, "some entries failed")
}
