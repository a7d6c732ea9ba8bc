package devcluster

import (
	"context"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/client"
)

// TestControllerFailsOver is `samsa dev --controller --slaves 1`: the
// controller names the broker master; when the master stops, it names
// the slave, and a producer that knows only the name server sends to it.
func TestControllerFailsOver(t *testing.T) {
	log := quietLogger()
	ctl, err := StartController(ControllerOptions{Dir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ctl.Close(); err != nil {
			t.Error(err)
		}
	}()
	dev, err := Start(Options{Dir: t.TempDir(), Logger: log, Slaves: 1, ControllerAddrs: []string{ctl.Addr()},
		Broker: broker.Config{MappedFileSizeCommitLog: 8 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if r, set := dev.Broker.Replication().ControllerRole(), dev.Broker.Replication().ControllerSyncSet(); r != "master" || len(set) != 2 {
		t.Fatalf("after Start the broker's role is %q and the sync-state set %v; want master and [1 2]", r, set)
	}
	co := client.ClientOptions{NameServers: []string{dev.NamesrvAddr()}}
	adm, err := client.NewAdmin(co)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	if err := adm.CreateTopic(ctx, "fo", client.TopicOptions{Queues: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: co, Group: "dev-fo"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := p.Send(sctx, &client.Message{Topic: "fo", Body: []byte(what)})
			cancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("send %s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	send("before")
	slave := dev.Slaves[0]
	// The topic reaches the slave with the metadata sync; the send after
	// the fail-over needs it there.
	deadline := time.Now().Add(60 * time.Second)
	for slave.Store().MaxQueueOffset("fo", 0) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the slave never held the first message")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := dev.Broker.Close(); err != nil {
		t.Fatal(err)
	}
	for slave.Replication().ControllerRole() != "master" {
		if time.Now().After(deadline.Add(60 * time.Second)) {
			t.Fatalf("the slave's role is %q after the master stopped, want master", slave.Replication().ControllerRole())
		}
		time.Sleep(20 * time.Millisecond)
	}
	send("after")
	// The store indexes a record just after it acknowledges it: wait for
	// the index, not for a moment.
	for n := slave.Store().MaxQueueOffset("fo", 0); n != 2; n = slave.Store().MaxQueueOffset("fo", 0) {
		if n > 2 || time.Now().After(deadline.Add(120*time.Second)) {
			t.Fatalf("the new master's queue holds %d messages, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
