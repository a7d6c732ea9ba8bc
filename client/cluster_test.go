package client

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/namesrv"
)

// testCluster is a name server and brokers on loopback, for end-to-end
// tests of this package.
type testCluster struct {
	t          testing.TB
	ns         *namesrv.Server
	brokers    []*broker.Broker
	configs    []broker.Config
	brokerAddr []string
	admin      *Admin
}

func quietLogger() *slog.Logger {
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startCluster starts a name server and n brokers (broker-a, broker-b, ...).
func startCluster(t testing.TB, n int, mutate func(*broker.Config)) *testCluster {
	t.Helper()
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	c := &testCluster{t: t, ns: ns}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir() // before the Cleanup below, so removed after it
	}
	t.Cleanup(c.close)
	for i := 0; i < n; i++ {
		cfg := broker.Config{StorePathRootDir: dirs[i], BrokerName: fmt.Sprintf("broker-%c", 'a'+i),
			NamesrvAddrs: []string{ns.Addr()}, Logger: quietLogger(), MappedFileSizeCommitLog: 64 << 20}
		if err := cfg.Set("listenPort", "0"); err != nil {
			t.Fatal(err)
		}
		if mutate != nil {
			mutate(&cfg)
		}
		b, err := broker.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Start(); err != nil {
			b.Close()
			t.Fatal(err)
		}
		c.brokers = append(c.brokers, b)
		c.configs = append(c.configs, cfg)
		c.brokerAddr = append(c.brokerAddr, b.Addr())
	}
	c.admin, err = NewAdmin(c.clientOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Wait for every broker to be registered.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ci, err := c.admin.ClusterInfo(context.Background())
		if err == nil && len(ci.BrokerAddrTable) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokers not registered: %v %v", ci, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

func (c *testCluster) clientOptions() ClientOptions {
	return ClientOptions{NameServers: []string{c.ns.Addr()}, Logger: quietLogger()}
}

// createTopic creates topic with queues per broker on every broker.
func (c *testCluster) createTopic(topic string, queues int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.admin.CreateTopic(ctx, topic, TopicOptions{Queues: queues}); err != nil {
		c.t.Fatal(err)
	}
}

// stopBroker closes broker i (a broker leaving the cluster).
func (c *testCluster) stopBroker(i int) {
	if c.brokers[i] != nil {
		c.brokers[i].Close()
		c.brokers[i] = nil
	}
}

// waitMessages polls until topic's queues hold n messages in all.
func (c *testCluster) waitMessages(topic string, n int64) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := c.admin.TopicStatus(context.Background(), topic, "")
		total := int64(0)
		for _, s := range st {
			total += s.MaxOffset
		}
		if err == nil && total == n {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s holds %d messages, want %d (%v)", topic, total, n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// restartBroker starts broker i again on its old port and directory.
func (c *testCluster) restartBroker(i int) {
	c.t.Helper()
	if c.brokers[i] != nil {
		c.t.Fatalf("broker %d is running", i)
	}
	cfg := c.configs[i]
	_, port, _ := net.SplitHostPort(c.brokerAddr[i])
	if err := cfg.Set("listenPort", port); err != nil {
		c.t.Fatal(err)
	}
	// The replication port would default to port+1, which another socket
	// may hold by now (a flake: "bind: address already in use").
	if err := cfg.Set("haListenPort", "0"); err != nil {
		c.t.Fatal(err)
	}
	b, err := broker.New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		b.Close()
		c.t.Fatal(err)
	}
	c.brokers[i] = b
}

func (c *testCluster) close() {
	if c.admin != nil {
		c.admin.Close()
	}
	for i := range c.brokers {
		c.stopBroker(i)
	}
	c.ns.Close()
}
