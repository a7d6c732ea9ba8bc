package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/samsamq/samsa/client"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// Server is a running gRPC endpoint in front of one Samsa cluster.
type Server struct {
	pb.UnimplementedMessagingServiceServer

	opts     Options
	lis      net.Listener
	gs       *grpc.Server
	admin    *client.Admin
	tp       *client.TransactionProducer
	receives chan struct{} // a slot per receive held
	served   chan struct{} // closed when Serve returns

	sessions sessions
	txns     txns

	pops struct {
		sync.Mutex
		m map[popKey]*client.PopConsumer
	}
}

// maxPopConsumers bounds the POP consumers kept, one per group, topic
// and filter in use.
const maxPopConsumers = 4096

type popKey struct {
	group, topic, expr string
	sql                bool
}

// New starts a Server listening on opts.Listen.
func New(opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("proxy: options: %w", err)
	}
	s := &Server{opts: opts, receives: make(chan struct{}, opts.MaxReceives), served: make(chan struct{})}
	s.pops.m = map[popKey]*client.PopConsumer{}
	s.sessions.init(opts.MaxSessions)
	s.txns.init(opts.MaxTransactions, opts.TransactionKeep)
	co := s.clientOptions()
	admin, err := client.NewAdmin(co)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	s.admin = admin
	tp, err := client.NewTransactionProducer(client.ProducerOptions{ClientOptions: co, Group: opts.ProducerGroup,
		Balancer: &client.HashModulo{}, MaxBodySize: opts.MaxMessageSize},
		client.TransactionOptions{Checker: s.checkBack, CheckOpen: true, ConfirmEnd: true})
	if err != nil {
		_ = admin.Close()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	s.tp = tp
	lis, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		_ = admin.Close()
		_ = tp.Close()
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	s.lis = lis
	so := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(10 * opts.MaxMessageSize), grpc.MaxConcurrentStreams(opts.MaxStreams),
		grpc.ChainUnaryInterceptor(s.unaryAuth), grpc.ChainStreamInterceptor(s.streamAuth),
	}
	if opts.TLS != nil {
		so = append(so, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.gs = grpc.NewServer(so...)
	pb.RegisterMessagingServiceServer(s.gs, s)
	go func() {
		defer close(s.served)
		if err := s.gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			opts.Logger.Error("proxy: serve", "err", err)
		}
	}()
	return s, nil
}

func (s *Server) clientOptions() client.ClientOptions {
	return client.ClientOptions{NameServers: s.opts.NameServers, TLS: s.opts.BrokerTLS, Credentials: s.opts.Credentials,
		Logger: s.opts.Logger}
}

// Addr is the address the Server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops serving (streams end), then closes the connections to the
// cluster.
func (s *Server) Close() error {
	s.gs.Stop()
	<-s.served
	s.sessions.closeAll()
	s.pops.Lock()
	for k, c := range s.pops.m {
		_ = c.Close()
		delete(s.pops.m, k)
	}
	s.pops.Unlock()
	return errors.Join(s.tp.Close(), s.admin.Close())
}

// popConsumer is the POP consumer of group on topic with a filter,
// made on first use.
func (s *Server) popConsumer(group, topic, expr string, sql bool) (*client.PopConsumer, error) {
	if expr == "" {
		expr = "*"
	}
	k := popKey{group, topic, expr, sql}
	s.pops.Lock()
	defer s.pops.Unlock()
	if c := s.pops.m[k]; c != nil {
		return c, nil
	}
	if len(s.pops.m) >= maxPopConsumers {
		return nil, errTooMany
	}
	c, err := client.NewPopConsumer(client.PopConsumerOptions{ClientOptions: s.clientOptions(), Group: group, Topic: topic,
		Expression: expr, SQL92: sql})
	if err != nil {
		return nil, err
	}
	s.pops.m[k] = c
	return c, nil
}

var errTooMany = errors.New("proxy: too many groups, topics and filters in use")

// clientID is the x-mq-client-id header of a call ("" without).
func clientID(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-mq-client-id"); len(v) > 0 {
		return v[0]
	}
	return ""
}
