package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
)

const clientACLFile = `accounts:
  - accessKey: adminKey1
    secretKey: adminSecret1
    admin: true
  - accessKey: userKey01
    secretKey: userSecret1
    topicPerms: [acl-topic=PUB|SUB]
    groupPerms: [acl-group=SUB]
`

// TestCredentials: with Credentials set, the producer, the pull consumer
// (offsets included) and the admin work against a name server and broker
// with ACL on; without them, or with a wrong secret, requests fail with
// NO_PERMISSION.
func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(file, []byte(clientACLFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := broker.Config{MappedFileSizeCommitLog: 4 << 20}
	cfg.ACLEnable, cfg.ACLFile, cfg.AccessKey, cfg.SecretKey = true, file, "adminKey1", "adminSecret1"
	dev, err := devcluster.Start(devcluster.Options{Dir: filepath.Join(dir, "store"), Logger: quietLogger(), Broker: cfg, NamesrvACLFile: file})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	opts := func(ak, sk string) ClientOptions {
		return ClientOptions{NameServers: []string{dev.NamesrvAddr()}, Logger: quietLogger(), RequestTimeout: 5 * time.Second,
			Credentials: Credentials{AccessKey: ak, SecretKey: sk}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range []ClientOptions{opts("", ""), opts("userKey01", "userSecret1")} {
		a, err := NewAdmin(o)
		if err != nil {
			t.Fatal(err)
		}
		err = a.CreateTopic(ctx, "acl-topic", TopicOptions{Queues: 1})
		a.Close()
		if err == nil || !strings.Contains(err.Error(), "NO_PERMISSION") && !strings.Contains(err.Error(), "access denied") {
			t.Fatalf("create topic as %q: %v", o.Credentials.AccessKey, err)
		}
	}
	adm, err := NewAdmin(opts("adminKey1", "adminSecret1"))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, "acl-topic", TopicOptions{Queues: 1}); err != nil {
		t.Fatal(err)
	}

	p, err := NewProducer(ProducerOptions{ClientOptions: opts("userKey01", "userSecret1"), Group: "acl-pg"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 5 {
		if _, err := p.Send(ctx, &Message{Topic: "acl-topic", Body: []byte{byte('a' + i)}}); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := NewPullConsumer(PullConsumerOptions{ClientOptions: opts("userKey01", "userSecret1"), Group: "acl-group"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	qs, err := pc.Queues(ctx, "acl-topic")
	if err != nil || len(qs) != 1 {
		t.Fatalf("queues %v %v", qs, err)
	}
	got, off := 0, int64(0)
	for deadline := time.Now().Add(30 * time.Second); got < 5 && time.Now().Before(deadline); {
		res, err := pc.Pull(ctx, qs[0], off, PullOptions{MaxMessages: 32})
		if err != nil {
			t.Fatal(err)
		}
		got += len(res.Messages)
		off = res.NextOffset
		if len(res.Messages) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got != 5 {
		t.Fatalf("pulled %d of 5", got)
	}
	if err := pc.Commit(ctx, map[MessageQueue]int64{qs[0]: off}); err != nil {
		t.Fatal(err)
	}

	bad, err := NewProducer(ProducerOptions{ClientOptions: opts("userKey01", "wrong-secret"), Group: "acl-pg"})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Send(ctx, &Message{Topic: "acl-topic", Body: []byte("x")}); err == nil {
		t.Fatal("a send with a wrong secret key succeeded")
	} else if !strings.Contains(err.Error(), "NO_PERMISSION") && !strings.Contains(err.Error(), "access denied") && !errors.Is(err, ErrNoRoute) {
		t.Logf("wrong secret: %v", err)
	}
}
