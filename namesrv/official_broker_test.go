package namesrv

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/samsamq/samsa/protocol"
)

// fakeBroker answers the official client with our protocol package and
// records what it was sent, decoded with our typed headers and bodies.
// It is a test double, not a broker: it stores nothing. Connections stay
// open until the test's cleanup closes them.
type fakeBroker struct {
	t  *testing.T
	ln net.Listener
	wg sync.WaitGroup

	mu struct {
		sync.Mutex
		conns      map[net.Conn]struct{}
		seen       map[int32]int
		decodeErrs []string
		sends      []*protocol.SendMessageRequestHeader
		pulls      []*protocol.PullMessageRequestHeader
		heartbeats []protocol.HeartbeatData
		offset     int64
	}
}

func startFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{t: t, ln: ln}
	b.mu.seen = map[int32]int{}
	b.mu.conns = map[net.Conn]struct{}{}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.mu.conns[nc] = struct{}{}
			b.mu.Unlock()
			b.wg.Add(1)
			go b.serve(nc)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for nc := range b.mu.conns {
			nc.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *fakeBroker) fail(what string, err error) {
	b.mu.Lock()
	b.mu.decodeErrs = append(b.mu.decodeErrs, what+": "+err.Error())
	b.mu.Unlock()
}

func (b *fakeBroker) serve(nc net.Conn) {
	defer b.wg.Done()
	defer nc.Close()
	br := bufio.NewReader(nc)
	var wmu sync.Mutex
	for {
		req, err := protocol.ReadCommand(br, 0, nil)
		if err != nil {
			return
		}
		resp := b.answer(req)
		if resp == nil || req.IsOneway() {
			continue
		}
		frame, err := protocol.AppendCommand(nil, resp)
		if err != nil {
			b.fail("encode", err)
			return
		}
		wmu.Lock()
		_, err = nc.Write(frame)
		wmu.Unlock()
		if err != nil {
			return
		}
	}
}

func (b *fakeBroker) answer(req *protocol.Command) *protocol.Command {
	b.mu.Lock()
	b.mu.seen[req.Code]++
	b.mu.Unlock()
	ok := protocol.NewResponse(req, protocol.Success, "")
	switch req.Code {
	case protocol.HeartBeat:
		var hb protocol.HeartbeatData
		if err := protocol.UnmarshalBody(req.Body, &hb); err != nil {
			b.fail("heartbeat", err)
		}
		b.mu.Lock()
		b.mu.heartbeats = append(b.mu.heartbeats, hb)
		b.mu.Unlock()
		return ok
	case protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage:
		h, err := protocol.DecodeSendMessageRequest(req)
		if err != nil {
			b.fail("send header", err)
			return protocol.NewResponse(req, protocol.SystemError, err.Error())
		}
		b.mu.Lock()
		b.mu.sends = append(b.mu.sends, h)
		off := b.mu.offset
		b.mu.offset++
		b.mu.Unlock()
		rh := protocol.SendMessageResponseHeader{MsgID: "7F00000100002A9F000000000000" + strconv.FormatInt(1000+off, 16), QueueID: h.QueueID, QueueOffset: off}
		ok.ExtFields = rh.Encode()
		return ok
	case protocol.GetConsumerListByGroup:
		var h protocol.GetConsumerListByGroupRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			b.fail("consumer list header", err)
		}
		var ids []string
		b.mu.Lock()
		for _, hb := range b.mu.heartbeats {
			for _, cd := range hb.ConsumerDataSet {
				if cd.GroupName == h.ConsumerGroup {
					ids = append(ids, hb.ClientID)
					break
				}
			}
		}
		b.mu.Unlock()
		ok.Body, _ = protocol.MarshalBody(protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: ids})
		return ok
	case protocol.QueryConsumerOffset:
		var h protocol.QueryConsumerOffsetRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			b.fail("query offset header", err)
		}
		return protocol.NewResponse(req, protocol.QueryNotFound, "no offset")
	case protocol.GetMaxOffset, protocol.GetMinOffset:
		var h protocol.QueueRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			b.fail("max/min offset header", err)
		}
		oh := protocol.OffsetResponseHeader{Offset: 0}
		ok.ExtFields = oh.Encode()
		return ok
	case protocol.PullMessage:
		var h protocol.PullMessageRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			b.fail("pull header", err)
		}
		b.mu.Lock()
		b.mu.pulls = append(b.mu.pulls, &h)
		b.mu.Unlock()
		resp := protocol.NewResponse(req, protocol.PullNotFound, "")
		ph := protocol.PullMessageResponseHeader{NextBeginOffset: h.QueueOffset}
		resp.ExtFields = ph.Encode()
		return resp
	case protocol.UpdateConsumerOffset:
		var h protocol.UpdateConsumerOffsetRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			b.fail("update offset header", err)
		}
		return ok
	case protocol.UnregisterClient:
		var h protocol.UnregisterClientRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			b.fail("unregister client header", err)
		}
		return ok
	}
	return protocol.NewResponse(req, protocol.RequestCodeNotSupported, "fake broker")
}

// TestOfficialClientsAgainstOurFrames runs rocketmq-client-go's producer and
// push consumer against our name server and a fake broker built on our
// protocol package: routes, heartbeats, sends (SEND_MESSAGE long header and
// SEND_BATCH_MESSAGE one-letter header), consumer list and pulls must all
// decode with our types, and the client must accept our answers.
func TestOfficialClientsAgainstOurFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the official clients")
	}
	rlog.SetLogLevel("error")
	srv := startServer(t, Options{})
	fb := startFakeBroker(t)
	reg := dial(t, srv.Addr())
	reg.register(registration("DefaultCluster", "broker-a", 0, fb.ln.Addr().String(), 1, topicConfig("T", 4)))
	ns := primitive.NewPassthroughResolver([]string{srv.Addr()})

	p, err := producer.NewDefaultProducer(producer.WithNsResolver(ns), producer.WithGroupName("pg"), producer.WithRetry(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage("T", []byte("one")).WithTag("TagA").WithKeys([]string{"k1"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != primitive.SendOK || res.MessageQueue.BrokerName != "broker-a" || res.OffsetMsgID == "" {
		t.Fatalf("send result %+v", res)
	}
	res, err = p.SendSync(ctx, primitive.NewMessage("T", []byte("two")), primitive.NewMessage("T", []byte("three")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("batch send %+v %v", res, err)
	}
	if err := p.Shutdown(); err != nil {
		t.Fatal(err)
	}

	c, err := consumer.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName("cg"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe("T", consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagB"},
		func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		fb.mu.Lock()
		pulls := len(fb.mu.pulls)
		fb.mu.Unlock()
		if pulls > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the push consumer never pulled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}

	fb.mu.Lock()
	defer fb.mu.Unlock()
	if len(fb.mu.decodeErrs) > 0 {
		t.Fatalf("our decoders failed on the official client's frames: %v", fb.mu.decodeErrs)
	}
	if len(fb.mu.sends) != 2 || fb.mu.sends[0].Topic != "T" || fb.mu.sends[0].ProducerGroup != "pg" || fb.mu.sends[0].Batch ||
		!fb.mu.sends[1].Batch || fb.mu.sends[1].BrokerName != "broker-a" {
		t.Fatalf("sends %+v", fb.mu.sends)
	}
	if fb.mu.seen[protocol.SendMessage] != 1 || fb.mu.seen[protocol.SendBatchMessage] != 1 {
		t.Fatalf("send codes %v", fb.mu.seen)
	}
	pull := fb.mu.pulls[0]
	if pull.ConsumerGroup != "cg" || pull.Topic != "T" || !pull.HasFlag(protocol.PullFlagSuspend) {
		t.Fatalf("pull %+v", pull)
	}
	var sawConsumer bool
	for _, hb := range fb.mu.heartbeats {
		for _, cd := range hb.ConsumerDataSet {
			for _, sd := range cd.SubscriptionDataSet {
				if cd.GroupName == "cg" && sd.Topic == "T" && sd.SubString == "TagA || TagB" {
					sawConsumer = cd.MessageModel == protocol.MessageModelClustering && len(sd.TagsSet) == 2 && len(sd.CodeSet) == 2
				}
			}
		}
	}
	if !sawConsumer {
		t.Fatalf("no consumer heartbeat with its subscription: %+v", fb.mu.heartbeats)
	}
	t.Logf("request codes seen by the fake broker: %v", fb.mu.seen)
}
