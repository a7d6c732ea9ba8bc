// Package grpcdriver is the loadgen driver for RocketMQ 5's gRPC protocol
// through Samsa's proxy (package proxy): the driver starts a proxy in
// front of the cluster's name servers and drives it with the generated Go
// gRPC client, so a run measures what a RocketMQ 5 client gets (the gRPC
// hop and the proxy's remoting hop) against the same cluster the samsa
// driver reaches directly.
//
// Producers send one message per SendMessage call: sync mode waits for
// each, async and batch modes keep up to MaxInFlight calls in flight (a
// batch is not gathered: RocketMQ 5's clients send one message a call).
// Consumers run receivers that each loop ReceiveMessage (32 messages,
// invisible 30 s, long polling 2 s) and acknowledge what they got in one
// AckMessage; pull mode is refused.
package grpcdriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/proxy"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// Options configure the driver.
type Options struct {
	NameServers []string // required
	// Receivers per consumer: concurrent ReceiveMessage loops (default 8).
	Receivers int
}

// Driver runs a proxy and gRPC clients of it.
type Driver struct {
	opts  Options
	proxy *proxy.Server
	conn  *grpc.ClientConn
	rpc   pb.MessagingServiceClient
	ids   atomic.Int64
}

// New starts a proxy on a free loopback port in front of opts.NameServers.
func New(opts Options) (*Driver, error) {
	if len(opts.NameServers) == 0 {
		return nil, errors.New("grpcdriver: no name server address")
	}
	if opts.Receivers <= 0 {
		opts.Receivers = 8
	}
	p, err := proxy.New(proxy.Options{NameServers: opts.NameServers, Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(p.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return &Driver{opts: opts, proxy: p, conn: conn, rpc: pb.NewMessagingServiceClient(conn)}, nil
}

// Name implements loadgen.Driver.
func (d *Driver) Name() string { return "grpc" }

// Describe implements loadgen.Driver.
func (d *Driver) Describe() map[string]any {
	return map[string]any{"client": "generated Go gRPC client of apache.rocketmq.v2.MessagingService",
		"server": "samsa proxy (in-process) in front of the cluster", "name_servers": d.opts.NameServers,
		"consumer": fmt.Sprintf("%d ReceiveMessage loops (32 messages, 2 s long polling), one AckMessage per batch", d.opts.Receivers)}
}

// Close implements loadgen.Driver.
func (d *Driver) Close() error { return errors.Join(d.conn.Close(), d.proxy.Close()) }

// CreateTopic creates the topic on every broker through the name servers.
func (d *Driver) CreateTopic(ctx context.Context, topic string, queues int) error {
	a, err := client.NewAdmin(client.ClientOptions{NameServers: d.opts.NameServers})
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }() // Admin.Close reports nothing
	return a.CreateTopic(ctx, topic, client.TopicOptions{Queues: queues})
}

func (d *Driver) ctx(ctx context.Context, who string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", who)
}

type producer struct {
	d      *Driver
	topic  string
	id     string
	window loadgen.Window
	sync   bool
	wg     sync.WaitGroup
	seq    atomic.Int64
}

// NewProducer implements loadgen.Driver.
func (d *Driver) NewProducer(_ context.Context, topic string, o loadgen.ProducerOptions) (loadgen.Producer, error) {
	id := "loadgen-producer-" + strconv.FormatInt(d.ids.Add(1), 10)
	return &producer{d: d, topic: topic, id: id, window: loadgen.NewWindow(o), sync: o.Mode == loadgen.SendSync}, nil
}

func (p *producer) Send(ctx context.Context, key string, payload []byte, done func(error)) {
	m := &pb.Message{Topic: &pb.Resource{Name: p.topic}, Body: payload, SystemProperties: &pb.SystemProperties{
		MessageId: p.id + "-" + strconv.FormatInt(p.seq.Add(1), 10), MessageType: pb.MessageType_NORMAL}}
	if key != "" {
		m.SystemProperties.Keys = []string{key}
	}
	send := func() error {
		cctx, cancel := context.WithTimeout(p.d.ctx(ctx, p.id), 10*time.Second)
		defer cancel()
		r, err := p.d.rpc.SendMessage(cctx, &pb.SendMessageRequest{Messages: []*pb.Message{m}})
		if err != nil {
			return err
		}
		if r.Status.GetCode() != pb.Code_OK {
			return fmt.Errorf("grpcdriver: send: %v %s", r.Status.GetCode(), r.Status.GetMessage())
		}
		return nil
	}
	if p.sync {
		done(send())
		return
	}
	if err := p.window.Acquire(ctx); err != nil {
		done(err)
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := send()
		p.window.Release()
		done(err)
	}()
}

func (p *producer) Close() error {
	p.wg.Wait()
	return nil
}

type consumer struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewConsumer implements loadgen.Driver.
func (d *Driver) NewConsumer(ctx context.Context, topic, group string, o loadgen.ConsumerOptions, h loadgen.Handler) (loadgen.Consumer, error) {
	if o.Mode == loadgen.ConsumePull {
		return nil, errors.New("grpcdriver: RocketMQ 5's gRPC receives by long polling only")
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cancel: cancel}
	id := "loadgen-consumer-" + strconv.FormatInt(d.ids.Add(1), 10)
	for range d.opts.Receivers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			d.receiveLoop(d.ctx(cctx, id), topic, group, h)
		}()
	}
	return c, nil
}

// receiveLoop receives and acknowledges until ctx ends.
func (d *Driver) receiveLoop(ctx context.Context, topic, group string, h loadgen.Handler) {
	req := &pb.ReceiveMessageRequest{Group: &pb.Resource{Name: group},
		MessageQueue:     &pb.MessageQueue{Topic: &pb.Resource{Name: topic}, Id: -1},
		FilterExpression: &pb.FilterExpression{Type: pb.FilterType_TAG, Expression: "*"}, BatchSize: 32,
		InvisibleDuration: durationpb.New(30 * time.Second), LongPollingTimeout: durationpb.New(2 * time.Second)}
	for ctx.Err() == nil {
		st, err := d.rpc.ReceiveMessage(ctx, req)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var entries []*pb.AckMessageEntry
		for {
			r, err := st.Recv()
			if err != nil {
				break
			}
			if m := r.GetMessage(); m != nil {
				h(m.Body)
				entries = append(entries, &pb.AckMessageEntry{MessageId: m.SystemProperties.GetMessageId(),
					ReceiptHandle: m.SystemProperties.GetReceiptHandle()})
			}
		}
		if len(entries) > 0 {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, _ = d.rpc.AckMessage(actx, &pb.AckMessageRequest{Group: &pb.Resource{Name: group}, Topic: &pb.Resource{Name: topic},
				Entries: entries}) // an ack lost redelivers after 30 s: counted as a duplicate
			cancel()
		}
	}
}

func (c *consumer) Close() error {
	c.cancel()
	c.wg.Wait()
	return nil
}
