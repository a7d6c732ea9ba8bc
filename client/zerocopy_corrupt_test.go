package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/samsamq/samsa/broker"
)

// logRecorder keeps what a client logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *logRecorder) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "")
}

// pullAll pulls q from 0 to its end, following NextOffset, and returns
// the message numbers received (sendAndCorrupt's bodies) and the results.
func pullAll(t *testing.T, pc *PullConsumer, q MessageQueue, n int) ([]int, []*PullResult) {
	t.Helper()
	var got []int
	var results []*PullResult
	for off := int64(0); off < int64(n); {
		res, err := pc.Pull(context.Background(), q, off, PullOptions{MaxMessages: 32})
		if err != nil {
			t.Fatalf("pull at %d: %v", off, err)
		}
		results = append(results, res)
		for _, m := range res.Messages {
			i, _ := strconv.Atoi(string(m.Body[2:4]))
			got = append(got, i)
		}
		if res.NextOffset <= off {
			t.Fatalf("pull at %d: status %v, next %d", off, res.Status, res.NextOffset)
		}
		off = res.NextOffset
	}
	return got, results
}

// TestZeroCopyCorruptRecordNeverDelivered: a body byte is flipped in a
// segment file while the broker is stopped (pullReadCheck auto,
// transferMsgByHeap false: the broker sends a checking client's pulls
// from its files, unread).
//
//   - Our client refuses the record: its pull's first answer, from the
//     files, fails the CRC check with an error naming topic, queue and
//     offset (logged, and on the result as Refused); the client asks
//     again with the broker's check, which moves it past the record.
//   - A client with RocketMQ's identity (language GO, version 317, no
//     crcChecked: what rocketmq-client-go sends) is served with the
//     broker's check and never receives the record either.
//
// Every other message arrives, each once.
func TestZeroCopyCorruptRecordNeverDelivered(t *testing.T) {
	const topic, n, victim = "corrupt-zc", 20, 7
	c := startCluster(t, 1, nil)
	sendAndCorrupt(t, c, topic, n, victim)
	for _, official := range []bool{false, true} {
		t.Run(fmt.Sprintf("official-identity=%v", official), func(t *testing.T) {
			logs := &logRecorder{}
			opts := c.clientOptions()
			opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			opts.SkipCRCCheck = official
			pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: opts, Group: fmt.Sprintf("zc-%v", official)})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			got, results := pullAll(t, pc, MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}, n)
			want := []int{}
			for i := range n {
				if i != victim {
					want = append(want, i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("received %v, want %v", got, want)
			}
			var refused *CorruptMessageError
			moved := false
			for _, r := range results {
				if r.Refused != nil {
					refused = r.Refused
				}
				if r.Status == PullOffsetIllegal && strings.Contains(r.Remark, "CORRUPT_RECORD") && r.NextOffset == victim+1 {
					moved = true
				}
			}
			if !moved {
				t.Fatal("no pull was moved past the corrupt record")
			}
			if official {
				if refused != nil || strings.Contains(logs.text(), "corrupt") {
					t.Fatalf("the broker's check was on, yet the client saw the record: %v %s", refused, logs.text())
				}
				return
			}
			if refused == nil || !errors.Is(refused, ErrCorruptMessage) {
				t.Fatal("the record sent from the files was not refused")
			}
			if refused.Topic != topic || refused.QueueID != 0 || refused.QueueOffset != victim {
				t.Fatalf("refused %+v: want topic %s queue 0 offset %d", refused, topic, victim)
			}
			for _, want := range []string{"corrupt message refused", "topic " + topic, "queue 0", fmt.Sprintf("queue offset %d", victim)} {
				if !strings.Contains(refused.Error(), want) || !strings.Contains(logs.text(), want) {
					t.Fatalf("error %q (log %q) does not say %q", refused, logs.text(), want)
				}
			}
		})
	}
}

// TestZeroCopyMatchesHeapPull: our client's pulls of an interleaved
// backlog give the same messages whether the broker sends them from its
// files or, with transferMsgByHeap, from memory.
func TestZeroCopyMatchesHeapPull(t *testing.T) {
	var bodies [2][][]byte
	for i, heap := range []bool{false, true} {
		c := startCluster(t, 1, func(cfg *broker.Config) { cfg.TransferMsgByHeap = heap })
		c.createTopic("zc-same", 4)
		p := newTestProducer(t, c, nil)
		for k := range 200 {
			body := bytes.Repeat([]byte{byte('a' + k%26)}, 50+(k*131)%2000)
			if _, err := p.Send(context.Background(), &Message{Topic: "zc-same", Body: body, Tags: fmt.Sprint(k % 3)}); err != nil {
				t.Fatal(err)
			}
		}
		c.waitMessages("zc-same", 200)
		pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "same"})
		if err != nil {
			t.Fatal(err)
		}
		qs, err := pc.Queues(context.Background(), "zc-same")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			for off := int64(0); ; {
				res, err := pc.Pull(context.Background(), q, off, PullOptions{MaxMessages: 7})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status == PullNoNewMessage {
					break
				}
				for _, m := range res.Messages {
					bodies[i] = append(bodies[i], append([]byte(m.Tags+"/"), m.Body...))
				}
				off = res.NextOffset
			}
		}
		pc.Close()
	}
	if len(bodies[0]) != 200 || len(bodies[1]) != 200 {
		t.Fatalf("%d and %d messages", len(bodies[0]), len(bodies[1]))
	}
	for i := range bodies[0] {
		if !bytes.Equal(bodies[0][i], bodies[1][i]) {
			t.Fatalf("message %d differs", i)
		}
	}
}
