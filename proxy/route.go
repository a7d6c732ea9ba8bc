package proxy

import (
	"context"
	"net"
	"slices"
	"strconv"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/protocol"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// endpoints is where a client reaches the proxy: the address it dialled,
// as its request says, else the listener's.
func (s *Server) endpoints(e *pb.Endpoints) *pb.Endpoints {
	if e != nil && len(e.Addresses) > 0 {
		return e
	}
	host, port, _ := net.SplitHostPort(s.Addr())
	p, _ := strconv.Atoi(port)
	return &pb.Endpoints{Scheme: pb.AddressScheme_IPv4, Addresses: []*pb.Address{{Host: host, Port: int32(p)}}}
}

var allTypes = []pb.MessageType{pb.MessageType_NORMAL, pb.MessageType_FIFO, pb.MessageType_DELAY, pb.MessageType_TRANSACTION}

func permission(read, write bool) pb.Permission {
	switch {
	case read && write:
		return pb.Permission_READ_WRITE
	case read:
		return pb.Permission_READ
	case write:
		return pb.Permission_WRITE
	}
	return pb.Permission_NONE
}

// route is topic's route, its queue data sorted by broker.
func (s *Server) route(ctx context.Context, topic string) (*protocol.TopicRouteData, *pb.Status) {
	if topic == "" {
		return nil, status(pb.Code_ILLEGAL_TOPIC, "no topic")
	}
	d, err := s.admin.Route(ctx, topic)
	if err != nil {
		return nil, errStatus(err)
	}
	slices.SortFunc(d.QueueDatas, func(a, b protocol.QueueData) int {
		if a.BrokerName < b.BrokerName {
			return -1
		}
		if a.BrokerName > b.BrokerName {
			return 1
		}
		return 0
	})
	return d, nil
}

// QueryRoute answers a topic's queues, every broker's endpoints the
// proxy's own.
func (s *Server) QueryRoute(ctx context.Context, req *pb.QueryRouteRequest) (*pb.QueryRouteResponse, error) {
	topic := req.GetTopic().GetName()
	if st := s.allowed(ctx, acl.TopicResource(topic, acl.Pub)); st != nil && s.allowed(ctx, acl.TopicResource(topic, acl.Sub)) != nil {
		return &pb.QueryRouteResponse{Status: st}, nil // neither producer nor consumer of topic
	}
	d, st := s.route(ctx, topic)
	if st != nil {
		return &pb.QueryRouteResponse{Status: st}, nil
	}
	ep := s.endpoints(req.GetEndpoints())
	var qs []*pb.MessageQueue
	for _, qd := range d.QueueDatas {
		n := max(qd.ReadQueueNums, qd.WriteQueueNums)
		for i := int32(0); i < n; i++ {
			r := i < qd.ReadQueueNums && qd.Perm&protocol.PermRead != 0
			w := i < qd.WriteQueueNums && qd.Perm&protocol.PermWrite != 0
			qs = append(qs, &pb.MessageQueue{Topic: req.GetTopic(), Id: i, Permission: permission(r, w),
				Broker: &pb.Broker{Name: qd.BrokerName, Id: 0, Endpoints: ep}, AcceptMessageTypes: allTypes})
		}
	}
	return &pb.QueryRouteResponse{Status: ok(), MessageQueues: qs}, nil
}

// QueryAssignment gives a push consumer one assignment per broker with
// readable queues: POP hands out that broker's queues.
func (s *Server) QueryAssignment(ctx context.Context, req *pb.QueryAssignmentRequest) (*pb.QueryAssignmentResponse, error) {
	topic := req.GetTopic().GetName()
	if st := s.allowed(ctx, acl.TopicResource(topic, acl.Sub)); st != nil {
		return &pb.QueryAssignmentResponse{Status: st}, nil
	}
	if st := s.allowed(ctx, acl.Resource{Name: req.GetGroup().GetName(), Group: true, Perm: acl.Sub}); st != nil {
		return &pb.QueryAssignmentResponse{Status: st}, nil
	}
	d, st := s.route(ctx, topic)
	if st != nil {
		return &pb.QueryAssignmentResponse{Status: st}, nil
	}
	ep := s.endpoints(req.GetEndpoints())
	var as []*pb.Assignment
	for _, qd := range d.QueueDatas {
		if qd.ReadQueueNums == 0 || qd.Perm&protocol.PermRead == 0 {
			continue
		}
		as = append(as, &pb.Assignment{MessageQueue: &pb.MessageQueue{Topic: req.GetTopic(), Id: -1,
			Permission: pb.Permission_READ_WRITE, Broker: &pb.Broker{Name: qd.BrokerName, Id: 0, Endpoints: ep},
			AcceptMessageTypes: allTypes}})
	}
	return &pb.QueryAssignmentResponse{Status: ok(), Assignments: as}, nil
}

// Heartbeat is answered OK: the proxy's own clients heartbeat the brokers.
func (s *Server) Heartbeat(ctx context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	if clientID(ctx) == "" {
		return &pb.HeartbeatResponse{Status: status(pb.Code_CLIENT_ID_REQUIRED, "no x-mq-client-id")}, nil
	}
	return &pb.HeartbeatResponse{Status: ok()}, nil
}

// NotifyClientTermination forgets the client's telemetry session.
func (s *Server) NotifyClientTermination(ctx context.Context, req *pb.NotifyClientTerminationRequest) (*pb.NotifyClientTerminationResponse, error) {
	if id := clientID(ctx); id != "" {
		s.sessions.remove(id, nil)
	}
	return &pb.NotifyClientTerminationResponse{Status: ok()}, nil
}
