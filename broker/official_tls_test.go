package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/internal/netx/netxtest"
)

// The official Go client's TLS (rocketmq-client-go v2, WithTls(true)):
// it dials every name server and broker with tls.Config{InsecureSkipVerify:
// true} and nothing else, so it cannot check the server's certificate or
// present one of its own. It works against tlsMode enforcing and
// permissive without client certificates; tlsClientAuth=require refuses
// it.

const officialTLSTopic, officialTLSCount = "tls-official", 50

// TestOfficialClientTLS: the official client produces and consumes with
// WithTls(true) through a name server and a broker that both enforce TLS;
// where they require a client certificate it is refused.
func TestOfficialClientTLS(t *testing.T) {
	t.Run("enforcing", func(t *testing.T) {
		out, err := runOfficialTLS(t, netx.ClientAuthNone)
		if err != nil || !strings.Contains(out, "OK") {
			t.Fatalf("official client over TLS: %v\n%s", err, out)
		}
	})
	t.Run("client-cert-required", func(t *testing.T) {
		out, err := runOfficialTLS(t, netx.ClientAuthRequire)
		if err == nil || strings.Contains(out, "OK") {
			t.Fatalf("the official client, which has no certificate, was served:\n%s", out)
		}
		t.Logf("refused as expected: %s", lastLine(out))
	})
}

// runOfficialTLS starts a name server and broker enforcing TLS with the
// client-certificate policy given, creates the topic and runs the "tls"
// phase in the official-client child.
func runOfficialTLS(t *testing.T, clientAuth string) (string, error) {
	certs := netxtest.New(t)
	tlsOpts := netx.TLSServerOptions{Mode: netx.TLSEnforcing, CertFile: certs.ServerCertFile, KeyFile: certs.ServerKey,
		CAFile: certs.CAFile, ClientAuth: clientAuth}
	cfg := Config{MappedFileSizeCommitLog: 1 << 20}
	cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSCAFile = tlsOpts.Mode, tlsOpts.CertFile, tlsOpts.KeyFile, certs.CAFile
	cfg.TLSClientAuth, cfg.TLSClientCertFile, cfg.TLSClientKeyFile = clientAuth, certs.ClientCertFile, certs.ClientKey
	cfg.TLSEnable = true
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(), Broker: cfg, NamesrvTLS: tlsOpts})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	a, err := client.NewAdmin(client.ClientOptions{NameServers: []string{dev.NamesrvAddr()}, TLS: certs.ClientConfig(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.CreateTopic(ctx, officialTLSTopic, client.TopicOptions{Queues: 4}); err != nil {
		t.Fatal(err)
	}
	cmd, _ := officialChildCmd(t, "tls", dev)
	timer := time.AfterFunc(4*time.Minute, func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// officialTLSPhase runs in the child: send officialTLSCount messages and
// receive them all with a push consumer, both over TLS.
func officialTLSPhase(ns string) error {
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("tls-producer"), producer.WithInstanceName(instance("tls")), producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second), producer.WithTls(true))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown()
	for i := 0; i < officialTLSCount; i++ {
		r, err := p.SendSync(context.Background(), primitive.NewMessage(officialTLSTopic, []byte(fmt.Sprintf("tls-%d", i))))
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		if r.Status != primitive.SendOK {
			return fmt.Errorf("send %d: %v", i, r)
		}
	}
	var c collector
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("tls-consumer"), consumer.WithInstance(instance("tls-consumer")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithTls(true))
	if err != nil {
		return err
	}
	if err := pc.Subscribe(officialTLSTopic, consumer.MessageSelector{}, c.consume); err != nil {
		return err
	}
	if err := pc.Start(); err != nil {
		return err
	}
	defer pc.Shutdown()
	return waitCollected("tls", &c, officialTLSCount)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
