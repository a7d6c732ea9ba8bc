package kafkadriver

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/samsamq/samsa/internal/netx/netxtest"
	"github.com/samsamq/samsa/loadgen"
)

// TestSASL: each mechanism logs in and carries messages; a wrong
// password fails New with the cluster's refusal.
func TestSASL(t *testing.T) {
	c := newCluster(t, kfake.EnableSASL(),
		kfake.Superuser(SASLPlain, "plain-user", "p1"),
		kfake.Superuser(SASLScramSHA256, "scram256-user", "p2"),
		kfake.Superuser(SASLScramSHA512, "scram512-user", "p3"))
	for i, s := range []SASL{
		{Mechanism: SASLPlain, User: "plain-user", Password: "p1"},
		{Mechanism: "scram-sha-256", User: "scram256-user", Password: "p2"},
		{Mechanism: SASLScramSHA512, User: "scram512-user", Password: "p3"},
	} {
		t.Run(s.Mechanism, func(t *testing.T) {
			d, err := New(Options{Brokers: c.ListenAddrs(), SASL: s})
			require.NoError(t, err)
			defer d.Close()
			topic := []string{"a", "b", "c"}[i]
			require.NoError(t, d.CreateTopic(context.Background(), topic, 2))
			cons, got := consume(t, d, topic, "g", loadgen.ConsumeLongPoll)
			produce(t, d, topic, loadgen.SendAsync, 0, 50, false)
			got.waitFor(t, 50)
			require.NoError(t, cons.Close())
		})
	}
	_, err := New(Options{Brokers: c.ListenAddrs(), SASL: SASL{Mechanism: SASLScramSHA256, User: "scram256-user", Password: "wrong"}})
	require.Error(t, err)
	require.ErrorContains(t, err, "kafkadriver: brokers ") // kfake hangs up; Kafka answers SASL_AUTHENTICATION_FAILED
}

// TestTLS: with a TLS config the driver reaches a TLS-only cluster.
func TestTLS(t *testing.T) {
	certs := netxtest.New(t)
	cert, err := tls.LoadX509KeyPair(certs.ServerCertFile, certs.ServerKey)
	require.NoError(t, err)
	c := newCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	d, err := New(Options{Brokers: c.ListenAddrs(), TLS: certs.ClientConfig(t, false)})
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, true, d.Describe()["tls"])
	require.NoError(t, d.CreateTopic(context.Background(), "t", 2))
	cons, got := consume(t, d, "t", "g", loadgen.ConsumeLongPoll)
	produce(t, d, "t", loadgen.SendSync, 0, 50, false)
	got.waitFor(t, 50)
	require.NoError(t, cons.Close())
}
