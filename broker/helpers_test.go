package broker

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// quietLogger drops everything below warnings (tests print those).
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startBroker starts a broker on loopback with a temp store.
func startBroker(t *testing.T, dir string, mutate func(*Config)) *Broker {
	t.Helper()
	b := newBroker(t, dir, mutate)
	if err := b.Start(); err != nil {
		b.Close()
		t.Fatal(err)
	}
	return b
}

// newBroker makes (not starts) a broker on loopback with a temp store.
func newBroker(t testing.TB, dir string, mutate func(*Config)) *Broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := Config{StorePathRootDir: dir, ListenPort: 0, Logger: quietLogger(),
		MappedFileSizeCommitLog: 4 << 20}
	_ = cfg.Set("listenPort", "0")
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawClient speaks remoting frames to a broker, several requests in flight.
type rawClient struct {
	t      testing.TB
	nc     net.Conn
	mu     sync.Mutex
	opaque int32
	wait   map[int32]chan *protocol.Command
	dead   chan struct{}
	err    error
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, nc: nc, wait: make(map[int32]chan *protocol.Command), dead: make(chan struct{})}
	go c.readLoop()
	t.Cleanup(func() { nc.Close() })
	return c
}

func (c *rawClient) readLoop() {
	br := bufio.NewReader(c.nc)
	defer close(c.dead)
	for {
		cmd, err := protocol.ReadCommand(br, 64<<20, nil)
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		if !cmd.IsResponse() {
			continue
		}
		c.mu.Lock()
		ch := c.wait[cmd.Opaque]
		delete(c.wait, cmd.Opaque)
		c.mu.Unlock()
		if ch != nil {
			ch <- cmd
		}
	}
}

// start sends req and returns the channel its response arrives on.
func (c *rawClient) start(req *protocol.Command) <-chan *protocol.Command {
	ch := make(chan *protocol.Command, 1)
	c.mu.Lock()
	c.opaque++
	req.Opaque = c.opaque
	c.wait[req.Opaque] = ch
	frame, err := protocol.AppendCommand(nil, req)
	if err == nil {
		_, err = c.nc.Write(frame)
	}
	c.mu.Unlock()
	if err != nil {
		c.t.Errorf("write: %v", err)
	}
	return ch
}

// call sends req and waits for its response.
func (c *rawClient) call(req *protocol.Command) *protocol.Command {
	c.t.Helper()
	select {
	case r := <-c.start(req):
		return r
	case <-c.dead:
		c.t.Fatalf("connection died: %v", c.err)
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no response to %s", req)
	}
	return nil
}

func sendReq(topic string, queue int32, body []byte, props map[string]string) *protocol.Command {
	p, _ := record.EncodeProperties(props)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, QueueID: queue, BornTimestamp: time.Now().UnixMilli(), Properties: string(p)}
	return protocol.NewRequest(protocol.SendMessage, h.Encode(), body)
}

func pullReq(group, topic string, queue int32, offset int64, max int32, suspend time.Duration, sub string) *protocol.Command {
	flag := protocol.BuildPullSysFlag(false, suspend > 0, true, false)
	h := protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, QueueOffset: offset,
		MaxMsgNums: max, SysFlag: flag, SuspendTimeoutMillis: suspend.Milliseconds(), Subscription: sub, ExpressionType: "TAG"}
	return protocol.NewRequest(protocol.PullMessage, h.Encode(), nil)
}

func createTopicReq(topic string, queues int32) *protocol.Command {
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: AutoCreateTopicKey, ReadQueueNums: queues,
		WriteQueueNums: queues, Perm: PermRead | PermWrite, TopicFilterType: "SINGLE_TAG"}
	return protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil)
}

// decodeRecords splits a pull body into records.
func decodeRecords(t testing.TB, body []byte) []record.Record {
	t.Helper()
	var out []record.Record
	for len(body) > 0 {
		size, _, err := record.Header(body)
		if err != nil || int(size) > len(body) {
			t.Fatalf("bad record header in pull body: %v (size %d of %d)", err, size, len(body))
		}
		var r record.Record
		if err := record.DecodeUnchecked(body[:size], &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		body = body[size:]
	}
	return out
}

func ext64(t testing.TB, c *protocol.Command, k string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(c.ExtFields[k], 10, 64)
	if err != nil {
		t.Fatalf("ext %s=%q: %v (%s)", k, c.ExtFields[k], err, c)
	}
	return v
}
