package proxy

import (
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// session is one client's telemetry stream. Its writer goroutine owns
// the stream's Send; anything else queues commands on out.
type session struct {
	clientID string
	out      chan *pb.TelemetryCommand
	done     chan struct{}
	once     sync.Once

	mu struct {
		sync.Mutex
		settings *pb.Settings
	}
}

// send queues cmd; false when the session ended or its queue is full.
func (ss *session) send(cmd *pb.TelemetryCommand) bool {
	select {
	case <-ss.done:
		return false
	default:
	}
	select {
	case ss.out <- cmd:
		return true
	case <-ss.done:
	default:
	}
	return false
}

func (ss *session) end() { ss.once.Do(func() { close(ss.done) }) }

// publishes reports whether the session is a producer that named topic
// in its settings ("" matches any producer).
func (ss *session) publishes(topic string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st := ss.mu.settings
	if st == nil || st.GetClientType() != pb.ClientType_PRODUCER {
		return false
	}
	if topic == "" {
		return true
	}
	return slices.ContainsFunc(st.GetPublishing().GetTopics(), func(r *pb.Resource) bool { return r.GetName() == topic })
}

// sessions are the live telemetry sessions by client id.
type sessions struct {
	mu struct {
		sync.Mutex
		m map[string]*session
	}
	max int
}

func (s *sessions) init(max int) {
	s.max = max
	s.mu.m = map[string]*session{}
}

// add registers ss, replacing an older session of its client; false when
// MaxSessions are live.
func (s *sessions) add(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.mu.m[ss.clientID]
	if old == nil && len(s.mu.m) >= s.max {
		return false
	}
	if old != nil {
		old.end()
	}
	s.mu.m[ss.clientID] = ss
	return true
}

// remove drops the session of id (only ss, when ss is not nil).
func (s *sessions) remove(id string, ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.mu.m[id]; cur != nil && (ss == nil || cur == ss) {
		cur.end()
		delete(s.mu.m, id)
	}
}

func (s *sessions) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.mu.m {
		ss.end()
		delete(s.mu.m, id)
	}
}

// producerFor picks the session to ask about a transaction: its own
// client's if live, else a producer of topic, else any producer.
func (s *sessions) producerFor(clientID, topic string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.mu.m[clientID]; ss != nil {
		return ss
	}
	var anyProducer *session
	for _, ss := range s.mu.m {
		if ss.publishes(topic) {
			return ss
		}
		if anyProducer == nil && ss.publishes("") {
			anyProducer = ss
		}
	}
	return anyProducer
}

// Telemetry keeps a client's settings and is the path for the commands
// the proxy sends it (transaction check-backs). Each Settings a client
// sends is answered with the settings the proxy imposes.
func (s *Server) Telemetry(stream pb.MessagingService_TelemetryServer) error {
	id := clientID(stream.Context())
	if id == "" {
		return grpcstatus.Error(codes.InvalidArgument, "telemetry without x-mq-client-id")
	}
	ss := &session{clientID: id, out: make(chan *pb.TelemetryCommand, 64), done: make(chan struct{})}
	if !s.sessions.add(ss) {
		return grpcstatus.Error(codes.ResourceExhausted, "too many telemetry sessions")
	}
	defer s.sessions.remove(id, ss)
	go func() { // the reader: ends the session when the client does
		for {
			cmd, err := stream.Recv()
			if err != nil {
				ss.end()
				return
			}
			if reply := s.telemetryCommand(ss, cmd); reply != nil && !ss.send(reply) {
				ss.end() // its answers are not read
				return
			}
		}
	}()
	for { // the writer: owns stream.Send
		select {
		case cmd := <-ss.out:
			if err := stream.Send(cmd); err != nil {
				ss.end()
				return err
			}
		case <-ss.done:
			// The client ended its side, another session replaced this
			// one, or the proxy closes: end the stream.
			return nil
		case <-stream.Context().Done():
			return nil
		}
	}
}

// telemetryCommand handles one command from a client and returns the
// answer, if any.
func (s *Server) telemetryCommand(ss *session, cmd *pb.TelemetryCommand) *pb.TelemetryCommand {
	switch c := cmd.GetCommand().(type) {
	case *pb.TelemetryCommand_Settings:
		ss.mu.Lock()
		ss.mu.settings = c.Settings
		ss.mu.Unlock()
		return &pb.TelemetryCommand{Status: ok(), Command: &pb.TelemetryCommand_Settings{Settings: s.serverSettings(c.Settings)}}
	case *pb.TelemetryCommand_ThreadStackTrace, *pb.TelemetryCommand_VerifyMessageResult:
		return nil // answers to commands the proxy never sends
	case *pb.TelemetryCommand_PrintThreadStackTraceCommand, *pb.TelemetryCommand_VerifyMessageCommand:
		return &pb.TelemetryCommand{Status: status(pb.Code_UNSUPPORTED, "the proxy does not serve this command")}
	}
	return &pb.TelemetryCommand{Status: status(pb.Code_NOT_IMPLEMENTED, "telemetry command not supported")}
}

// serverSettings are a client's settings as the proxy answers them: its
// own, with the proxy's limits, retry policy and polling time.
func (s *Server) serverSettings(c *pb.Settings) *pb.Settings {
	out := proto.Clone(c).(*pb.Settings)
	switch c.GetClientType() {
	case pb.ClientType_PRODUCER:
		pub := out.GetPublishing()
		if pub == nil {
			pub = &pb.Publishing{}
		}
		pub.MaxBodySize, pub.ValidateMessageType = int32(s.opts.MaxMessageSize), false
		out.PubSub = &pb.Settings_Publishing{Publishing: pub}
		if out.BackoffPolicy == nil {
			out.BackoffPolicy = &pb.RetryPolicy{MaxAttempts: 3}
		}
		if out.BackoffPolicy.Strategy == nil {
			out.BackoffPolicy.Strategy = &pb.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &pb.ExponentialBackoff{
				Initial: durationpb.New(10 * time.Millisecond), Max: durationpb.New(time.Second), Multiplier: 2}}
		}
	case pb.ClientType_PUSH_CONSUMER, pb.ClientType_SIMPLE_CONSUMER:
		sub := out.GetSubscription()
		if sub == nil {
			sub = &pb.Subscription{}
		}
		fifo, batch := false, int32(32)
		sub.Fifo, sub.ReceiveBatchSize = &fifo, &batch
		sub.LongPollingTimeout = durationpb.New(min(20*time.Second, s.opts.LongPollMax))
		out.PubSub = &pb.Settings_Subscription{Subscription: sub}
		out.BackoffPolicy = &pb.RetryPolicy{MaxAttempts: int32(s.opts.MaxDeliveryAttempts),
			Strategy: &pb.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &pb.ExponentialBackoff{
				Initial: durationpb.New(time.Second), Max: durationpb.New(10 * time.Second), Multiplier: 2}}}
	}
	return out
}
