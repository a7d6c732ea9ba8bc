package proxy

import (
	"testing"
	"time"

	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

// A message nacked (its invisible time cut short) again and again goes to
// the group's DLQ once past the group's retries (16, RocketMQ's default).
func TestNackedPastMaxAttemptsGoesToDLQ(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("nack", 1)
	ctx := e.ctx("c1")
	e.send(ctx, msg("nack", "N1", "nacked"))
	deliveries := 0
	deadline := time.Now().Add(2 * time.Minute)
	for deliveries < 17 {
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries", deliveries)
		}
		msgs, _ := e.receive(ctx, "ng", "nack", 1, 30*time.Second, 2*time.Second)
		for _, m := range msgs {
			deliveries++
			if got := m.SystemProperties.GetDeliveryAttempt(); got != int32(deliveries) {
				t.Fatalf("delivery %d says attempt %d", deliveries, got)
			}
			r, err := e.rpc.ChangeInvisibleDuration(ctx, &pb.ChangeInvisibleDurationRequest{Group: res("ng"), Topic: res("nack"),
				ReceiptHandle: m.SystemProperties.GetReceiptHandle(), InvisibleDuration: durationOf(time.Millisecond), MessageId: "N1"})
			if err != nil || r.Status.Code != pb.Code_OK {
				t.Fatalf("nack: %v %v", r, err)
			}
		}
	}
	// The next receive finds it due past its retries: to the DLQ.
	if msgs, _ := e.receive(ctx, "ng", "nack", 1, 30*time.Second, 2*time.Second); len(msgs) != 0 {
		t.Fatalf("delivered an 18th time (attempt %d)", msgs[0].SystemProperties.GetDeliveryAttempt())
	}
	got := e.receiveAll(ctx, "dlq-reader", "%DLQ%ng", 1)
	if string(got[0].Body) != "nacked" {
		t.Fatalf("DLQ holds %q", got[0].Body)
	}
}
