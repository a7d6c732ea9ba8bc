package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// silentBroker accepts connections and reads requests, answering none:
// a paused process. It counts the requests by code.
type silentBroker struct {
	ln    net.Listener
	mu    sync.Mutex
	codes map[int32]int
	conns []net.Conn
}

func startSilentBroker(t *testing.T) *silentBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentBroker{ln: ln, codes: map[int32]int{}}
	t.Cleanup(s.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				for {
					cmd, err := protocol.ReadCommand(c, 16<<20, nil)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.codes[cmd.Code]++
					s.mu.Unlock()
				}
			}()
		}
	}()
	return s
}

func (s *silentBroker) count(code int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codes[code]
}

func (s *silentBroker) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// registerAs registers addr with the cluster's name server as broker-a's
// master (brokerId 0), holding topic, at stateVersion: a newer
// stateVersion takes the id over from another address (a fail-over).
func registerAs(t *testing.T, p *Producer, c *testCluster, addr, topic string, stateVersion int64) {
	t.Helper()
	body, err := protocol.MarshalBody(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]protocol.TopicConfig{topic: {TopicName: topic, ReadQueueNums: 2, WriteQueueNums: 2,
			Perm: protocol.PermRead | protocol.PermWrite}},
		DataVersion: protocol.DataVersion{StateVersion: stateVersion, Timestamp: time.Now().UnixMilli(), Counter: stateVersion}}})
	if err != nil {
		t.Fatal(err)
	}
	h := protocol.RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: addr, ClusterName: c.brokers[0].Config().BrokerClusterName,
		BrokerID: 0, BodyCrc32: protocol.BodyCRC32(body)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := p.in.rc.Invoke(ctx, c.ns.Addr(), protocol.NewRequest(protocol.RegisterBroker, h.Encode(), body))
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("register %s: %v %v", addr, resp, err)
	}
}

// TestSendNotQueuedBehindAStalledBroker: a send to a master that stopped
// answering (a paused process) times out; the next send is not queued
// behind it for another SendTimeout but waits, probing it, until the name
// server names broker-a's new master, and goes there. The paused broker
// gets the one send that timed out and heartbeats, nothing more.
func TestSendNotQueuedBehindAStalledBroker(t *testing.T) {
	c := startCluster(t, 1, nil)
	const topic = "stalled"
	c.createTopic(topic, 2)
	p := newTestProducer(t, c, func(o *ProducerOptions) {
		o.RouteRefresh = time.Hour
		o.Retries = -1
		o.SendTimeout = 500 * time.Millisecond
	})
	ctx := context.Background()
	if _, err := p.Send(ctx, &Message{Topic: topic, Body: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	silent := startSilentBroker(t)
	registerAs(t, p, c, silent.ln.Addr().String(), topic, 1)
	// Send until one goes to the silent broker (the route is refreshed
	// by the sends' own lookups) and times out.
	deadline := time.Now().Add(20 * time.Second)
	stored := int64(1)
	for {
		p.in.refreshSoon(topic)
		_, err := p.Send(ctx, &Message{Topic: topic, Body: []byte("to the paused one")})
		if err == nil {
			stored++ // still to the real broker: the route had not changed yet
		}
		if errors.Is(err, ErrTimeout) && silent.count(protocol.SendMessageV2)+silent.count(protocol.SendMessage) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no send timed out on the silent broker: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !p.stalls.stalled(silent.ln.Addr().String()) {
		t.Fatal("the silent broker is not marked stalled after a send to it timed out")
	}

	// The next send waits for a master that answers.
	done := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := p.Send(sctx, &Message{Topic: topic, Body: []byte("after the fail-over")})
		done <- err
	}()
	waitUntil(t, func() bool { return silent.count(protocol.HeartBeat) >= 2 }, "the stalled broker probed")
	select {
	case err := <-done:
		t.Fatalf("the send ended before a master answered: %v", err)
	default:
	}
	registerAs(t, p, c, c.brokerAddr[0], topic, 2) // broker-a's new master
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("send after the route changed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the send did not go to the new master")
	}
	if n := silent.count(protocol.SendMessageV2) + silent.count(protocol.SendMessage); n != 1 {
		t.Fatalf("the stalled broker got %d sends, want only the one that timed out", n)
	}
	c.waitMessages(topic, stored+1)
}

func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
