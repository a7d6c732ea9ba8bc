package devcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

// TestGroupNames: the default name's letter walks the alphabet; another
// name gets a letter appended.
func TestGroupNames(t *testing.T) {
	for _, c := range []struct {
		base string
		i    int
		want string
	}{{"", 0, "broker-a"}, {"", 2, "broker-c"}, {"broker-a", 1, "broker-b"}, {"orders", 0, "orders-a"},
		{"orders", 25, "orders-z"}, {"orders-b", 1, "orders-b-b"}} {
		if got := groupName(c.base, c.i); got != c.want {
			t.Errorf("groupName(%q, %d) = %q, want %q", c.base, c.i, got, c.want)
		}
	}
	if _, err := Start(Options{Groups: MaxGroups + 1, Logger: quietLogger()}); err == nil {
		t.Fatalf("Start with %d groups did not fail", MaxGroups+1)
	}
}

// TestThreeGroups is `samsa dev --groups 3` end to end: three broker
// groups in one cluster, registered with one name server; a topic
// created cluster-wide (mqadmin updateTopic -c) is on every master; the
// client's producer spreads 3,000 messages over every group's queues,
// and one consumer group reads each of them exactly once.
func TestThreeGroups(t *testing.T) {
	const (
		groups  = 3
		queues  = 4
		total   = 3000
		senders = 3
		topic   = "spread"
	)
	dev, err := Start(Options{Dir: t.TempDir(), Logger: quietLogger(), Groups: groups,
		Broker: broker.Config{MappedFileSizeCommitLog: 8 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var names, addrs []string
	for _, g := range dev.Groups {
		names, addrs = append(names, g.Name), append(addrs, g.BrokerAddr())
	}
	if !slices.Equal(names, []string{"broker-a", "broker-b", "broker-c"}) || dev.Group != dev.Groups[0] {
		t.Fatalf("groups %v (first %s)", names, dev.Name)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(addrs)))) != groups {
		t.Fatalf("group addresses %v are not distinct", addrs)
	}

	co := client.ClientOptions{NameServers: []string{dev.NamesrvAddr()}}
	adm, err := client.NewAdmin(co)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ci, err := adm.ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cluster := dev.Broker.Config().BrokerClusterName
	if got := slices.Sorted(slices.Values(ci.ClusterAddrTable[cluster])); !slices.Equal(got, names) {
		t.Fatalf("the name server's cluster %s has %v, want %v", cluster, got, names)
	}
	for _, g := range dev.Groups {
		if a := ci.BrokerAddrTable[g.Name].BrokerAddrs[protocol.MasterID]; a != g.BrokerAddr() {
			t.Fatalf("the name server has %s's master at %q, want %s", g.Name, a, g.BrokerAddr())
		}
	}
	if err := adm.CreateTopic(ctx, topic, client.TopicOptions{Queues: queues, Cluster: cluster}); err != nil {
		t.Fatal(err)
	}

	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: co, Group: "spread-producer", SendTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	sentTo := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Go(func() {
			for i := s; i < total; i += senders {
				res, err := p.Send(ctx, &client.Message{Topic: topic, Body: fmt.Appendf(nil, "m-%05d", i)})
				if err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
				mu.Lock()
				sentTo[res.Queue.BrokerName]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, g := range dev.Groups {
		if sentTo[g.Name] == 0 {
			t.Fatalf("no send went to %s: %v", g.Name, sentTo)
		}
	}
	t.Logf("sent per group: %v", sentTo)
	// What each master's store holds, once indexed: every group some, all
	// of them together every message.
	stored := func() (map[string]int64, int64) {
		per, sum := map[string]int64{}, int64(0)
		for _, g := range dev.Groups {
			for q := range int32(queues) {
				per[g.Name] += g.Broker.Store().MaxQueueOffset(topic, q)
			}
			sum += per[g.Name]
		}
		return per, sum
	}
	waitFor(t, func() bool { _, sum := stored(); return sum == total }, "every message indexed on the masters")
	per, _ := stored()
	for _, g := range dev.Groups {
		if per[g.Name] == 0 || per[g.Name] != int64(sentTo[g.Name]) {
			t.Fatalf("stored per group %v, sent per group %v", per, sentTo)
		}
	}

	seen := make(map[string]int, total) // body → deliveries
	fromGroup := map[string]int{}
	all, closed := make(chan struct{}), false
	c, err := client.NewPushConsumer(client.PushConsumerOptions{ClientOptions: co, Group: "spread-readers",
		Start: client.StartEarliest}, func(_ context.Context, m *client.MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		seen[string(m.Body)]++
		fromGroup[m.Queue.BrokerName]++
		if len(seen) == total && !closed {
			closed = true
			close(all)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-ctx.Done():
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		t.Fatalf("consumed %d distinct messages of %d before the deadline", n, total)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range total {
		if n := seen[fmt.Sprintf("m-%05d", i)]; n != 1 {
			t.Fatalf("message %d consumed %d times", i, n)
		}
	}
	for _, g := range dev.Groups {
		if fromGroup[g.Name] != sentTo[g.Name] {
			t.Fatalf("consumed per group %v, sent per group %v", fromGroup, sentTo)
		}
	}
}

// TestGroupsWithSlaves: every group gets its slaves, each following its
// own master, with the stores laid out under Dir/<brokerName>.
func TestGroupsWithSlaves(t *testing.T) {
	dir := t.TempDir()
	dev, err := Start(Options{Dir: dir, Logger: quietLogger(), Groups: 2, Slaves: 1,
		Broker: broker.Config{BrokerRole: broker.AsyncMaster, MappedFileSizeCommitLog: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := dev.WaitSlavesInSync(context.Background(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, g := range dev.Groups {
		if len(g.Slaves) != 1 {
			t.Fatalf("%s has %d slaves", g.Name, len(g.Slaves))
		}
		s := g.Slaves[0]
		waitFor(t, func() bool { return s.Replication().HAMasterAddr() == g.Broker.Replication().HAAddr() }, g.Name+"'s slave following its master")
		if s.Config().BrokerName != g.Name || g.Broker.Config().StorePathRootDir != filepath.Join(dir, g.Name, "master") ||
			s.Config().StorePathRootDir != filepath.Join(dir, g.Name, "slave-1") {
			t.Fatalf("%s: master store %s, slave %s (%s) store %s", g.Name, g.Broker.Config().StorePathRootDir,
				s.Config().BrokerName, s.Addr(), s.Config().StorePathRootDir)
		}
	}
}
