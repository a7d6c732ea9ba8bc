package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/devcluster"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

func quietLogger() *slog.Logger {
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// env is a cluster, a proxy in front of it and a gRPC client of the proxy.
type env struct {
	t       *testing.T
	cluster *devcluster.Cluster
	proxy   *Server
	admin   *client.Admin
	conn    *grpc.ClientConn
	rpc     pb.MessagingServiceClient
}

// start runs groups broker groups (transactions checked back after 1 s)
// and a proxy; mutate adjusts the proxy's options.
func start(t *testing.T, groups int, mutate func(*Options)) *env {
	t.Helper()
	cfg := broker.Config{Logger: quietLogger(), MappedFileSizeCommitLog: 64 << 20,
		TransactionTimeout: time.Second, TransactionCheckInterval: 500 * time.Millisecond}
	c, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Groups: groups, Broker: cfg, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cluster: c}
	t.Cleanup(func() { _ = c.Close() })
	opts := Options{NameServers: []string{c.NamesrvAddr()}, Listen: "127.0.0.1:0", Logger: quietLogger()}
	if mutate != nil {
		mutate(&opts)
	}
	if e.proxy, err = New(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.proxy.Close() })
	if e.admin, err = client.NewAdmin(client.ClientOptions{NameServers: []string{c.NamesrvAddr()}, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.admin.Close() })
	if e.conn, err = grpc.NewClient(e.proxy.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.conn.Close() })
	e.rpc = pb.NewMessagingServiceClient(e.conn)
	return e
}

func (e *env) createTopic(topic string, queues int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.admin.CreateTopic(ctx, topic, client.TopicOptions{Queues: queues}); err != nil {
		e.t.Fatal(err)
	}
}

// ctx is a call context of client id, with a generous deadline.
func (e *env) ctx(id string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	e.t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", id)
}

func res(name string) *pb.Resource { return &pb.Resource{Name: name} }

func msg(topic, id, body string) *pb.Message {
	return &pb.Message{Topic: res(topic), Body: []byte(body),
		SystemProperties: &pb.SystemProperties{MessageId: id, MessageType: pb.MessageType_NORMAL}}
}

func (e *env) send(ctx context.Context, ms ...*pb.Message) *pb.SendMessageResponse {
	e.t.Helper()
	r, err := e.rpc.SendMessage(ctx, &pb.SendMessageRequest{Messages: ms})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Status.Code != pb.Code_OK {
		e.t.Fatalf("send: %v", r.Status)
	}
	return r
}

// receive makes one ReceiveMessage call and checks the stream's shape:
// a status, then messages, then a delivery timestamp when there are any.
func (e *env) receive(ctx context.Context, group, topic string, n int, invisible, poll time.Duration) ([]*pb.Message, *pb.Status) {
	e.t.Helper()
	st, err := e.rpc.ReceiveMessage(ctx, &pb.ReceiveMessageRequest{Group: res(group),
		MessageQueue: &pb.MessageQueue{Topic: res(topic), Id: -1}, FilterExpression: &pb.FilterExpression{Type: pb.FilterType_TAG, Expression: "*"},
		BatchSize: int32(n), InvisibleDuration: durationOf(invisible), LongPollingTimeout: durationOf(poll)})
	if err != nil {
		e.t.Fatal(err)
	}
	var status *pb.Status
	var msgs []*pb.Message
	stamped := false
	for {
		r, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			e.t.Fatal(err)
		}
		switch c := r.Content.(type) {
		case *pb.ReceiveMessageResponse_Status:
			if status != nil || len(msgs) > 0 {
				e.t.Fatalf("a status after the first element: %v", c.Status)
			}
			status = c.Status
		case *pb.ReceiveMessageResponse_Message:
			if status == nil || stamped {
				e.t.Fatal("a message before the status or after the delivery timestamp")
			}
			msgs = append(msgs, c.Message)
		case *pb.ReceiveMessageResponse_DeliveryTimestamp:
			stamped = true
		}
	}
	if status == nil {
		e.t.Fatal("no status in the receive stream")
	}
	if len(msgs) > 0 && !stamped {
		e.t.Fatal("messages without a delivery timestamp")
	}
	return msgs, status
}

// receiveAll receives and acknowledges until want messages came, or fails
// after a generous deadline.
func (e *env) receiveAll(ctx context.Context, group, topic string, want int) []*pb.Message {
	e.t.Helper()
	var got []*pb.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < want {
		if time.Now().After(deadline) {
			e.t.Fatalf("received %d of %d messages", len(got), want)
		}
		msgs, st := e.receive(ctx, group, topic, 32, 30*time.Second, 2*time.Second)
		if st.Code == pb.Code_TOPIC_NOT_FOUND && strings.HasPrefix(topic, "%DLQ%") {
			time.Sleep(100 * time.Millisecond) // the DLQ topic, created by the broker, is not yet routed
			continue
		}
		if st.Code != pb.Code_OK && st.Code != pb.Code_MESSAGE_NOT_FOUND {
			e.t.Fatalf("receive: %v", st)
		}
		for _, m := range msgs {
			e.ack(ctx, group, topic, m)
		}
		got = append(got, msgs...)
	}
	return got
}

func (e *env) ack(ctx context.Context, group, topic string, m *pb.Message) {
	e.t.Helper()
	r, err := e.rpc.AckMessage(ctx, &pb.AckMessageRequest{Group: res(group), Topic: res(topic),
		Entries: []*pb.AckMessageEntry{{MessageId: m.SystemProperties.MessageId, ReceiptHandle: m.SystemProperties.GetReceiptHandle()}}})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Status.Code != pb.Code_OK {
		e.t.Fatalf("ack: %v", r.Status)
	}
}

func TestSendReceiveAck(t *testing.T) {
	e := start(t, 2, nil)
	e.createTopic("orders", 2)
	ctx := e.ctx("c1")
	rr, err := e.rpc.QueryRoute(ctx, &pb.QueryRouteRequest{Topic: res("orders")})
	if err != nil || rr.Status.Code != pb.Code_OK {
		t.Fatalf("route: %v %v", rr, err)
	}
	if len(rr.MessageQueues) != 4 {
		t.Fatalf("route has %d queues, want 4 (2 brokers x 2)", len(rr.MessageQueues))
	}
	if r, err := e.rpc.QueryRoute(ctx, &pb.QueryRouteRequest{Topic: res("missing")}); err != nil || r.Status.Code != pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("route of a missing topic: %v %v", r, err)
	}
	const n = 20
	want := map[string]string{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("ID%03d", i)
		m := msg("orders", id, fmt.Sprint("body ", i))
		tag := "T"
		m.SystemProperties.Tag = &tag
		m.UserProperties = map[string]string{"k": "v"}
		e.send(ctx, m)
		want[id] = fmt.Sprint("body ", i)
	}
	got := e.receiveAll(ctx, "g1", "orders", n)
	for _, m := range got {
		id := m.SystemProperties.MessageId
		if want[id] != string(m.Body) {
			t.Fatalf("message %s: body %q, want %q", id, m.Body, want[id])
		}
		if m.SystemProperties.GetTag() != "T" || m.UserProperties["k"] != "v" || m.SystemProperties.GetDeliveryAttempt() != 1 {
			t.Fatalf("message %s: tag %q, properties %v, attempt %d", id, m.SystemProperties.GetTag(), m.UserProperties,
				m.SystemProperties.GetDeliveryAttempt())
		}
		delete(want, id)
	}
	if len(want) != 0 {
		t.Fatalf("not received: %v", want)
	}
	if msgs, st := e.receive(ctx, "g1", "orders", 32, 30*time.Second, 0); len(msgs) != 0 || st.Code != pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after acknowledging all: %d messages, %v", len(msgs), st)
	}
}

func TestInvisibleExpiryRedelivers(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("redo", 1)
	ctx := e.ctx("c1")
	e.send(ctx, msg("redo", "R1", "again"))
	var first *pb.Message
	for first == nil {
		msgs, _ := e.receive(ctx, "g", "redo", 1, 2*time.Second, 2*time.Second)
		if len(msgs) > 0 {
			first = msgs[0]
		}
	}
	// Not acknowledged: it comes back once its invisible time passed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		msgs, _ := e.receive(ctx, "g", "redo", 1, 30*time.Second, 3*time.Second)
		if len(msgs) == 1 {
			if string(msgs[0].Body) != "again" || msgs[0].SystemProperties.GetDeliveryAttempt() < 2 {
				t.Fatalf("redelivered %q attempt %d", msgs[0].Body, msgs[0].SystemProperties.GetDeliveryAttempt())
			}
			e.ack(ctx, "g", "redo", msgs[0])
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not redelivered")
		}
	}
	// The stale handle is refused.
	r, err := e.rpc.AckMessage(ctx, &pb.AckMessageRequest{Group: res("g"), Topic: res("redo"),
		Entries: []*pb.AckMessageEntry{{MessageId: "R1", ReceiptHandle: "garbage"}}})
	if err != nil || r.Status.Code != pb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("ack of a malformed handle: %v %v", r, err)
	}
}

func TestFIFOGroupsKeepOrderOnOneQueue(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("fifo", 4)
	ctx := e.ctx("c1")
	groups := []string{"ga", "gb", "gc"}
	const per = 10
	for i := 0; i < per; i++ {
		for _, g := range groups {
			m := msg("fifo", fmt.Sprintf("%s-%02d", g, i), fmt.Sprintf("%s %d", g, i))
			mg := g
			m.SystemProperties.MessageType, m.SystemProperties.MessageGroup = pb.MessageType_FIFO, &mg
			e.send(ctx, m)
		}
	}
	// A FIFO message without a group is refused.
	bad := msg("fifo", "nogroup", "x")
	bad.SystemProperties.MessageType = pb.MessageType_FIFO
	if r, err := e.rpc.SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{bad}}); err != nil || r.Status.Code != pb.Code_ILLEGAL_MESSAGE_GROUP {
		t.Fatalf("FIFO without a group: %v %v", r, err)
	}
	got := e.receiveAll(ctx, "fg", "fifo", per*len(groups))
	queue := map[string]int32{}
	next := map[string]int{}
	byQueue := map[int32][]*pb.Message{}
	for _, m := range got {
		byQueue[m.SystemProperties.QueueId] = append(byQueue[m.SystemProperties.QueueId], m)
	}
	for q, ms := range byQueue {
		for _, m := range ms {
			g := m.SystemProperties.GetMessageGroup()
			if m.SystemProperties.MessageType != pb.MessageType_FIFO {
				t.Fatalf("message type %v", m.SystemProperties.MessageType)
			}
			if prev, seen := queue[g]; seen && prev != q {
				t.Fatalf("group %s on queues %d and %d", g, prev, q)
			}
			queue[g] = q
			if want := fmt.Sprintf("%s %d", g, next[g]); string(m.Body) != want {
				t.Fatalf("group %s: got %q, want %q", g, m.Body, want)
			}
			next[g]++
		}
	}
}

func TestDelayedMessage(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("later", 1)
	ctx := e.ctx("c1")
	at := time.Now().Add(3 * time.Second)
	m := msg("later", "D1", "delayed")
	m.SystemProperties.MessageType, m.SystemProperties.DeliveryTimestamp = pb.MessageType_DELAY, timestampOf(at)
	e.send(ctx, m)
	got := e.receiveAll(ctx, "dg", "later", 1)
	if time.Now().Before(at) {
		t.Fatalf("delivered before its delivery time %v", at)
	}
	if got[0].SystemProperties.MessageType != pb.MessageType_DELAY || got[0].SystemProperties.DeliveryTimestamp == nil {
		t.Fatalf("delivered as %v without its delivery time", got[0].SystemProperties.MessageType)
	}
}

func TestDeadLetter(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("dl", 1)
	ctx := e.ctx("c1")
	e.send(ctx, msg("dl", "X1", "poison"))
	var m *pb.Message
	for m == nil {
		msgs, _ := e.receive(ctx, "dg", "dl", 1, 30*time.Second, 2*time.Second)
		if len(msgs) > 0 {
			m = msgs[0]
		}
	}
	r, err := e.rpc.ForwardMessageToDeadLetterQueue(ctx, &pb.ForwardMessageToDeadLetterQueueRequest{Group: res("dg"), Topic: res("dl"),
		ReceiptHandle: m.SystemProperties.GetReceiptHandle(), MessageId: "X1", DeliveryAttempt: 1, MaxDeliveryAttempts: 1})
	if err != nil || r.Status.Code != pb.Code_OK {
		t.Fatalf("forward: %v %v", r, err)
	}
	got := e.receiveAll(ctx, "dlq-reader", "%DLQ%dg", 1)
	if string(got[0].Body) != "poison" {
		t.Fatalf("DLQ holds %q", got[0].Body)
	}
}

func TestUnimplementedAnswersSo(t *testing.T) {
	e := start(t, 1, nil)
	ctx := e.ctx("c1")
	st, err := e.rpc.PullMessage(ctx, &pb.PullMessageRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	if err == nil || !isUnimplemented(err) {
		t.Fatalf("PullMessage: %v, want Unimplemented", err)
	}
}

func TestOffsets(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("offs", 1)
	ctx := e.ctx("c1")
	for i := 0; i < 5; i++ {
		e.send(ctx, msg("offs", fmt.Sprint("O", i), "x"))
	}
	rr, err := e.rpc.QueryRoute(ctx, &pb.QueryRouteRequest{Topic: res("offs")})
	if err != nil || len(rr.MessageQueues) != 1 {
		t.Fatalf("route: %v %v", rr, err)
	}
	mq := rr.MessageQueues[0]
	end, err := e.rpc.QueryOffset(ctx, &pb.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: pb.QueryOffsetPolicy_END})
	if err != nil || end.Status.Code != pb.Code_OK || end.Offset != 5 {
		t.Fatalf("END: %v %v", end, err)
	}
	begin, err := e.rpc.QueryOffset(ctx, &pb.QueryOffsetRequest{MessageQueue: mq, QueryOffsetPolicy: pb.QueryOffsetPolicy_BEGINNING})
	if err != nil || begin.Status.Code != pb.Code_OK || begin.Offset != 0 {
		t.Fatalf("BEGINNING: %v %v", begin, err)
	}
	if r, err := e.rpc.GetOffset(ctx, &pb.GetOffsetRequest{Group: res("og"), MessageQueue: mq}); err != nil || r.Status.Code != pb.Code_OFFSET_NOT_FOUND {
		t.Fatalf("offset of a group without one: %v %v", r, err)
	}
	if r, err := e.rpc.UpdateOffset(ctx, &pb.UpdateOffsetRequest{Group: res("og"), MessageQueue: mq, Offset: 3}); err != nil || r.Status.Code != pb.Code_OK {
		t.Fatalf("update: %v %v", r, err)
	}
	if r, err := e.rpc.GetOffset(ctx, &pb.GetOffsetRequest{Group: res("og"), MessageQueue: mq}); err != nil || r.Status.Code != pb.Code_OK || r.Offset != 3 {
		t.Fatalf("offset after the update: %v %v", r, err)
	}
}

func TestReceivesHeldAreBounded(t *testing.T) {
	e := start(t, 1, func(o *Options) { o.MaxReceives = 1 })
	e.createTopic("bounded", 1)
	ctx := e.ctx("c1")
	held := make(chan struct{})
	go func() {
		defer close(held)
		e.rpc.ReceiveMessage(ctx, &pb.ReceiveMessageRequest{Group: res("bg"), MessageQueue: &pb.MessageQueue{Topic: res("bounded")},
			BatchSize: 1, InvisibleDuration: durationOf(time.Minute), LongPollingTimeout: durationOf(20 * time.Second)})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, st := e.receive(ctx, "bg", "bounded", 1, time.Minute, 0)
		if st.Code == pb.Code_TOO_MANY_REQUESTS {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second receive beside a held one: %v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// One AckMessage of many entries acknowledges them all (one
// BATCH_ACK_MESSAGE); acknowledged again, each entry is refused: none is
// in flight any more.
func TestAckManyAtOnce(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("many", 2)
	ctx := e.ctx("c1")
	const n = 20
	for i := 0; i < n; i++ {
		e.send(ctx, msg("many", fmt.Sprint("M", i), fmt.Sprint(i)))
	}
	var got []*pb.Message
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d", len(got), n)
		}
		msgs, _ := e.receive(ctx, "mg", "many", 32, 5*time.Minute, 2*time.Second)
		got = append(got, msgs...)
	}
	var entries []*pb.AckMessageEntry
	for _, m := range got {
		entries = append(entries, &pb.AckMessageEntry{MessageId: m.SystemProperties.MessageId, ReceiptHandle: m.SystemProperties.GetReceiptHandle()})
	}
	req := &pb.AckMessageRequest{Group: res("mg"), Topic: res("many"), Entries: entries}
	r, err := e.rpc.AckMessage(ctx, req)
	if err != nil || r.Status.Code != pb.Code_OK || len(r.Entries) != n {
		t.Fatalf("ack of %d: %v %v", n, r, err)
	}
	r, err = e.rpc.AckMessage(ctx, req)
	if err != nil || r.Status.Code != pb.Code_MULTIPLE_RESULTS {
		t.Fatalf("second ack: %v %v", r, err)
	}
	for _, en := range r.Entries {
		if en.Status.Code != pb.Code_INVALID_RECEIPT_HANDLE {
			t.Fatalf("entry %s acknowledged twice: %v", en.MessageId, en.Status)
		}
	}
}
