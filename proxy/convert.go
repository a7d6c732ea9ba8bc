package proxy

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/samsamq/samsa/client"
	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// Properties RocketMQ 5's system properties travel in on the remoting
// side (RocketMQ's MessageConst names).
const (
	propTimerDeliverMs = "TIMER_DELIVER_MS"
	propTimerOutMs     = "TIMER_OUT_MS"
	propTraceContext   = "TRACE_CONTEXT"
	propBornHost       = "BORN_HOST"
	propDLQOriginTopic = "DLQ_ORIGIN_TOPIC"
	propDLQOriginMsgID = "DLQ_ORIGIN_MESSAGE_ID"
)

// hidden are the stored properties a client sees as system properties,
// or not at all, rather than user properties.
var hidden = map[string]bool{
	client.PropertyKeys: true, client.PropertyTags: true, client.PropertyWaitStoreMsgOK: true, client.PropertyDelayLevel: true,
	client.PropertyRetryTopic: true, client.PropertyRealTopic: true, client.PropertyRealQueueID: true,
	client.PropertyProducerGroup: true, client.PropertyUniqKey: true, client.PropertyReconsumeTime: true,
	client.PropertyMaxReconsume: true, client.PropertyShardingKey: true, client.PropertyConsumeStart: true,
	client.PropertyOriginMsgID: true, client.PropertyTransactionPrepared: true, client.PropertyTransactionID: true,
	propTimerDeliverMs: true, propTimerOutMs: true, propTraceContext: true, propBornHost: true,
	"TIMER_DELAY_SEC": true, "TIMER_DELAY_MS": true, "POP_CK": true, "1ST_POP_TIME": true, "CLUSTER": true,
	"MIN_OFFSET": true, "MAX_OFFSET": true, "TRAN_PREPARED_QUEUE_OFFSET": true, "__STARTDELIVERTIME": true,
	"TIMER_ENQUEUE_MS": true, "TIMER_ROLL_TIMES": true, "TIMER_DEQUEUE_MS": true, "TRANSACTION_CHECK_TIMES": true,
	"CHECK_IMMUNITY_TIME_IN_SECONDS": true,
}

// toMessage is a gRPC message as package client sends it.
func toMessage(m *pb.Message) *client.Message {
	sp := m.GetSystemProperties()
	out := &client.Message{Topic: m.GetTopic().GetName(), Body: m.GetBody(), Tags: sp.GetTag(), Keys: sp.GetKeys(),
		Properties: make(map[string]string, len(m.GetUserProperties())+3)}
	for k, v := range m.GetUserProperties() {
		out.Properties[k] = v
	}
	out.Properties[client.PropertyUniqKey] = sp.GetMessageId()
	if g := sp.GetMessageGroup(); g != "" {
		out.ShardingKey = g
	}
	if sp.DeliveryTimestamp != nil {
		if at := sp.GetDeliveryTimestamp().AsTime(); at.After(time.Now()) {
			out.Properties[propTimerDeliverMs] = strconv.FormatInt(at.UnixMilli(), 10)
		}
	}
	if tc := sp.GetTraceContext(); tc != "" {
		out.Properties[propTraceContext] = tc
	}
	if bh := sp.GetBornHost(); bh != "" {
		out.Properties[propBornHost] = bh
	}
	return out
}

// fromMessage is a received message as a RocketMQ 5 client reads it.
// handle and invisible are set for a popped message.
func fromMessage(m *client.MessageExt, topic, handle string, invisible time.Duration) *pb.Message {
	props := m.PropertyMap()
	user := make(map[string]string, len(props))
	for k, v := range props {
		if !hidden[k] {
			user[k] = v
		}
	}
	sum := md5.Sum(m.Body)
	sp := &pb.SystemProperties{
		MessageId:      m.MsgID,
		BodyDigest:     &pb.Digest{Type: pb.DigestType_MD5, Checksum: strings.ToUpper(hex.EncodeToString(sum[:]))},
		BodyEncoding:   pb.Encoding_IDENTITY,
		MessageType:    pb.MessageType_NORMAL,
		BornTimestamp:  timestamppb.New(m.BornTime),
		BornHost:       m.BornHost.Addr().String(),
		StoreTimestamp: timestamppb.New(m.StoreTime),
		StoreHost:      m.StoreHost.String(),
		QueueId:        int32(m.Queue.QueueID),
	}
	if bh := props[propBornHost]; bh != "" {
		sp.BornHost = bh
	}
	if id := props[client.PropertyUniqKey]; id != "" {
		sp.MessageId = id
	}
	if m.Tags != "" {
		sp.Tag = &m.Tags
	}
	if k := props[client.PropertyKeys]; k != "" {
		sp.Keys = strings.Fields(k)
	}
	off := m.QueueOffset
	sp.QueueOffset = &off
	if g := props[client.PropertyShardingKey]; g != "" {
		sp.MessageGroup = &g
		sp.MessageType = pb.MessageType_FIFO
	}
	if at := props[propTimerDeliverMs]; at != "" {
		if ms, err := strconv.ParseInt(at, 10, 64); err == nil {
			sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(ms))
			sp.MessageType = pb.MessageType_DELAY
		}
	}
	if props[client.PropertyTransactionPrepared] == "true" {
		sp.MessageType = pb.MessageType_TRANSACTION
	}
	if tc := props[propTraceContext]; tc != "" {
		sp.TraceContext = &tc
	}
	if handle != "" {
		sp.ReceiptHandle = &handle
		sp.InvisibleDuration = durationpb.New(invisible)
		attempt := m.ReconsumeTimes + 1
		sp.DeliveryAttempt = &attempt
	}
	return &pb.Message{Topic: &pb.Resource{Name: topic}, UserProperties: user, SystemProperties: sp, Body: m.Body}
}

// The gRPC receipt handle: "S1 <commit-log offset> <extraInfo>".
const handlePrefix = "S1 "

func makeHandle(commitLogOffset int64, extra string) string {
	return handlePrefix + strconv.FormatInt(commitLogOffset, 10) + " " + extra
}

// parseHandle splits a gRPC receipt handle; ok is false when malformed.
func parseHandle(h string) (commitLogOffset int64, extra string, ok bool) {
	rest, found := strings.CutPrefix(h, handlePrefix)
	if !found {
		return 0, "", false
	}
	off, extra, found := strings.Cut(rest, " ")
	if !found {
		return 0, "", false
	}
	n, err := strconv.ParseInt(off, 10, 64)
	return n, extra, err == nil
}
