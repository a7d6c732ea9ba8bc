package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/internal/netx/netxtest"
	"github.com/samsamq/samsa/namesrv"
	"github.com/samsamq/samsa/protocol"
)

// tlsCluster is a name server (TLS permissive) and a broker registered
// with it over TLS, the broker's remoting port in the given mode.
func tlsCluster(t *testing.T, certs *netxtest.Certs, mode, clientAuth string) (*namesrv.Server, *Broker) {
	t.Helper()
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quietLogger(),
		TLS: netx.TLSServerOptions{Mode: netx.TLSPermissive, CertFile: certs.ServerCertFile, KeyFile: certs.ServerKey}})
	if err == nil {
		err = ns.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	b := startBroker(t, "", func(c *Config) {
		c.NamesrvAddrs = []string{ns.Addr()}
		c.TLSMode, c.TLSCertFile, c.TLSKeyFile, c.TLSCAFile, c.TLSClientAuth = mode, certs.ServerCertFile, certs.ServerKey, certs.CAFile, clientAuth
		c.TLSEnable = true // registers with the name server over TLS
		c.TLSClientCertFile, c.TLSClientKeyFile = certs.ClientCertFile, certs.ClientKey
	})
	t.Cleanup(func() { b.Close() })
	return ns, b
}

// produceConsume sends n messages to topic through the client library
// and pulls them back; it returns the first error.
func produceConsume(ns, topic string, cfg *tls.Config, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	co := client.ClientOptions{NameServers: []string{ns}, TLS: cfg, RequestTimeout: 10 * time.Second}
	a, err := client.NewAdmin(co)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.CreateTopic(ctx, topic, client.TopicOptions{Queues: 2}); err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: co, SendTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		if _, err := p.Send(ctx, &client.Message{Topic: topic, Body: []byte(fmt.Sprintf("m%d", i))}); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
	}
	c, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: co, Group: "g-" + topic})
	if err != nil {
		return err
	}
	defer c.Close()
	qs, err := c.Queues(ctx, topic)
	if err != nil {
		return err
	}
	// The queues are indexed shortly after the answers: pull (holding
	// up to 200 ms) until every message is back.
	got, next := 0, make([]int64, len(qs))
	for got < n {
		if ctx.Err() != nil {
			return fmt.Errorf("pulled %d messages, sent %d", got, n)
		}
		for i, q := range qs {
			r, err := c.Pull(ctx, q, next[i], client.PullOptions{MaxMessages: 32, Wait: 200 * time.Millisecond})
			if err != nil {
				return fmt.Errorf("pull %v: %w", q, err)
			}
			got += len(r.Messages)
			next[i] = r.NextOffset
		}
	}
	if got != n {
		return fmt.Errorf("pulled %d messages, sent %d", got, n)
	}
	return nil
}

// TestTLSEnforcing: our client produces and consumes over TLS; a plain
// connection to the broker is closed unanswered.
func TestTLSEnforcing(t *testing.T) {
	certs := netxtest.New(t)
	ns, b := tlsCluster(t, certs, netx.TLSEnforcing, netx.ClientAuthNone)
	if err := produceConsume(ns.Addr(), "tls-enforcing", certs.ClientConfig(t, false), 20); err != nil {
		t.Fatal(err)
	}
	// The text protocol shares the port and its TLS (samsa stats).
	a, err := client.NewAdmin(client.ClientOptions{NameServers: []string{ns.Addr()}, TLS: certs.ClientConfig(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	st, err := a.BrokerStats(context.Background(), b.Addr())
	if err != nil || len(st) == 0 {
		t.Fatalf("stats over TLS: %v %v", st, err)
	}
	plain := dialTCP(t, b.Addr())
	req, _ := protocol.AppendCommand(nil, protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	if _, err := plain.Write(req); err != nil {
		t.Fatal(err)
	}
	waitServerClose(t, plain, "a plain connection to an enforcing broker")
	// A client that trusts another CA does not talk to it.
	other, err := netx.TLSClientOptions{Enable: true, CAFile: certs.OtherCAFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := produceConsume(ns.Addr(), "tls-other-ca", other, 1); err == nil {
		t.Fatal("a client trusting another CA produced")
	}
}

// TestTLSPermissive: one port serves our client over TLS and plain.
func TestTLSPermissive(t *testing.T) {
	certs := netxtest.New(t)
	ns, _ := tlsCluster(t, certs, netx.TLSPermissive, netx.ClientAuthNone)
	if err := produceConsume(ns.Addr(), "tls-permissive", certs.ClientConfig(t, false), 20); err != nil {
		t.Fatalf("TLS: %v", err)
	}
	if err := produceConsume(ns.Addr(), "plain-permissive", nil, 20); err != nil {
		t.Fatalf("plain: %v", err)
	}
}

// TestTLSClientCertRequired: with tlsClientAuth=require a client without
// a certificate is refused and one with a certificate the CA signed is
// served.
func TestTLSClientCertRequired(t *testing.T) {
	certs := netxtest.New(t)
	ns, _ := tlsCluster(t, certs, netx.TLSEnforcing, netx.ClientAuthRequire)
	// The name server does not ask for certificates; the broker does.
	if err := produceConsume(ns.Addr(), "tls-nocert", certs.ClientConfig(t, false), 1); err == nil {
		t.Fatal("a client without a certificate produced")
	}
	if err := produceConsume(ns.Addr(), "tls-cert", certs.ClientConfig(t, true), 10); err != nil {
		t.Fatal(err)
	}
}

// TestTLSReplication: a SYNC_MASTER and its slave, both enforcing TLS,
// replicate over a TLS link: every send answered SEND_OK is on the slave.
func TestTLSReplication(t *testing.T) {
	certs := netxtest.New(t)
	cfg := Config{BrokerRole: SyncMaster, MappedFileSizeCommitLog: 1 << 20, HASendHeartbeatInterval: 100 * time.Millisecond,
		SlaveSyncInterval: 200 * time.Millisecond}
	cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSCAFile = netx.TLSEnforcing, certs.ServerCertFile, certs.ServerKey, certs.CAFile
	cfg.TLSEnable = true
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(), Broker: cfg, Slaves: 1,
		NamesrvTLS: netx.TLSServerOptions{Mode: netx.TLSEnforcing, CertFile: certs.ServerCertFile, KeyFile: certs.ServerKey}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	waitLong(t, func() bool {
		s := dev.Broker.repl.Slaves()
		return len(s) == 1 && s[0].InSync
	}, "the slave in sync over TLS")
	if err := produceConsume(dev.NamesrvAddr(), "tls-repl", certs.ClientConfig(t, false), 20); err != nil {
		t.Fatal(err)
	}
	m, s := dev.Broker.Store(), dev.Slaves[0].Store()
	waitLong(t, func() bool { return s.WrittenOffset() == m.WrittenOffset() }, "the slave's log to reach the master's")
	sameCommitLog(t, m, s)
}
