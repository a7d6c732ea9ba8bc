package proxy

import (
	"testing"
	"time"

	pb "github.com/samsamq/samsa/proxy/rmqpb"
)

func TestTransactionsCommitRollbackAndCheckBack(t *testing.T) {
	e := start(t, 1, nil)
	e.createTopic("tx", 1)
	ctx := e.ctx("producer-1")
	tel, err := e.rpc.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pt := pb.ClientType_PRODUCER
	if err := tel.Send(&pb.TelemetryCommand{Command: &pb.TelemetryCommand_Settings{Settings: &pb.Settings{ClientType: &pt,
		PubSub: &pb.Settings_Publishing{Publishing: &pb.Publishing{Topics: []*pb.Resource{res("tx")}}}}}}); err != nil {
		t.Fatal(err)
	}
	answer, err := tel.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if answer.GetStatus().GetCode() != pb.Code_OK || answer.GetSettings().GetPublishing().GetMaxBodySize() != 4<<20 ||
		answer.GetSettings().GetBackoffPolicy() == nil {
		t.Fatalf("settings answer: %v", answer)
	}
	half := func(id string) string {
		m := msg("tx", id, id)
		m.SystemProperties.MessageType = pb.MessageType_TRANSACTION
		return e.send(ctx, m).Entries[0].TransactionId
	}
	end := func(id, txn string, r pb.TransactionResolution, src pb.TransactionSource) {
		t.Helper()
		resp, err := e.rpc.EndTransaction(ctx, &pb.EndTransactionRequest{Topic: res("tx"), MessageId: id, TransactionId: txn,
			Resolution: r, Source: src})
		if err != nil || resp.Status.Code != pb.Code_OK {
			t.Fatalf("end %s: %v %v", id, resp, err)
		}
	}
	end("commit", half("commit"), pb.TransactionResolution_COMMIT, pb.TransactionSource_SOURCE_CLIENT)
	end("rollback", half("rollback"), pb.TransactionResolution_ROLLBACK, pb.TransactionSource_SOURCE_CLIENT)
	openTxn := half("checked")
	// The broker checks the open one back: the proxy asks on the
	// producer's telemetry stream.
	var check *pb.RecoverOrphanedTransactionCommand
	for check == nil {
		cmd, err := tel.Recv()
		if err != nil {
			t.Fatal(err)
		}
		check = cmd.GetRecoverOrphanedTransactionCommand()
	}
	if check.TransactionId != openTxn || check.Message.GetSystemProperties().GetMessageId() != "checked" {
		t.Fatalf("check-back of %s (%s), want %s", check.TransactionId, check.Message.GetSystemProperties().GetMessageId(), openTxn)
	}
	end("checked", check.TransactionId, pb.TransactionResolution_COMMIT, pb.TransactionSource_SOURCE_SERVER_CHECK)

	got := e.receiveAll(ctx, "txg", "tx", 2)
	seen := map[string]bool{}
	for _, m := range got {
		seen[m.SystemProperties.MessageId] = true
	}
	if !seen["commit"] || !seen["checked"] {
		t.Fatalf("received %v, want commit and checked", seen)
	}
	// The rolled-back one never comes.
	if msgs, _ := e.receive(ctx, "txg", "tx", 32, 30*time.Second, 2*time.Second); len(msgs) != 0 {
		t.Fatalf("after the committed ones: %s", msgs[0].SystemProperties.MessageId)
	}
	if r, err := e.rpc.EndTransaction(ctx, &pb.EndTransactionRequest{Topic: res("tx"), MessageId: "x", TransactionId: "unknown",
		Resolution: pb.TransactionResolution_COMMIT}); err != nil || r.Status.Code != pb.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("end of an unknown transaction: %v %v", r, err)
	}
}

func TestOpenTransactionsAreBounded(t *testing.T) {
	e := start(t, 1, func(o *Options) { o.MaxTransactions, o.TransactionKeep = 2, time.Nanosecond })
	e.createTopic("txb", 1)
	ctx := e.ctx("producer-2")
	half := func(id string) *pb.SendResultEntry {
		m := msg("txb", id, id)
		m.SystemProperties.MessageType = pb.MessageType_TRANSACTION
		r, err := e.rpc.SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{m}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Entries[0]
	}
	first := half("a")
	half("b")
	// Full: the oldest, held past TransactionKeep, are let go for the new one.
	if got := half("c"); got.Status.Code != pb.Code_OK {
		t.Fatalf("third transaction: %v", got.Status)
	}
	r, err := e.rpc.EndTransaction(ctx, &pb.EndTransactionRequest{Topic: res("txb"), MessageId: "a", TransactionId: first.TransactionId,
		Resolution: pb.TransactionResolution_COMMIT})
	if err != nil || r.Status.Code != pb.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("end of a transaction let go: %v %v", r, err)
	}
}
