package client

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
)

func TestSplitBatch(t *testing.T) {
	for _, tc := range []struct {
		ends          []int
		maxB, maxMsgs int
		want          []int
	}{
		{[]int{10, 20, 30}, 100, 10, []int{3}},
		{[]int{10, 20, 30}, 20, 10, []int{2, 3}},
		{[]int{10, 20, 30}, 10, 10, []int{1, 2, 3}},
		{[]int{50, 60}, 10, 10, []int{1, 2}}, // an oversized message travels alone
		{[]int{1, 2, 3, 4, 5}, 0, 2, []int{2, 4, 5}},
		{[]int{7}, 1, 1, []int{1}},
	} {
		if got := splitBatch(tc.ends, tc.maxB, tc.maxMsgs); !slices.Equal(got, tc.want) {
			t.Errorf("splitBatch(%v, %d, %d) = %v, want %v", tc.ends, tc.maxB, tc.maxMsgs, got, tc.want)
		}
	}
}

// TestSendBatchSplits: a 6 MiB batch (six 1 MiB messages; the broker
// refuses a batch body over 4 MiB) goes out as two requests to one
// queue, every message stored once, in order.
func TestSendBatchSplits(t *testing.T) {
	c := startCluster(t, 1, nil)
	c.createTopic("split", 2)
	p := newTestProducer(t, c, nil)
	var msgs []*Message
	for i := 0; i < 6; i++ {
		body := bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
		msgs = append(msgs, &Message{Topic: "split", Body: body, Properties: map[string]string{"i": fmt.Sprint(i)}})
	}
	res, err := p.SendBatch(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	q := res[0].Queue
	for i, r := range res {
		if r == nil || r.Queue != q || r.QueueOffset != res[0].QueueOffset+int64(i) {
			t.Fatalf("result %d: %+v (first %+v)", i, r, res[0])
		}
	}
	c.waitMessages("split", 6)
	pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: c.clientOptions(), Group: "split-group"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []*MessageExt
	for off := res[0].QueueOffset; len(got) < 6; {
		pr, err := pc.Pull(context.Background(), q, off, PullOptions{})
		if err != nil || len(pr.Messages) == 0 {
			t.Fatalf("pull at %d: %v %v", off, pr, err)
		}
		got, off = append(got, pr.Messages...), pr.NextOffset
	}
	for i, m := range got {
		if m.Property("i") != fmt.Sprint(i) || m.Body[0] != byte('a'+i) {
			t.Fatalf("message %d: property i=%q, body %q...", i, m.Property("i"), m.Body[:1])
		}
	}
}
