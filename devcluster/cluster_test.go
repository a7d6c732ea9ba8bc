package devcluster

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/client"
)

// TestSlaveHAAddr: the hook gets the master's replication address once it
// listens, and a slave follows the address the hook returns, both the
// slaves Start starts and one AddSlave adds later to a filled master.
func TestSlaveHAAddr(t *testing.T) {
	var asked []string
	hook := func(masterHA string) (string, error) {
		asked = append(asked, masterHA)
		return masterHA, nil
	}
	cfg := broker.Config{BrokerRole: broker.AsyncMaster, MappedFileSizeCommitLog: 1 << 20}
	dev, err := Start(Options{Dir: t.TempDir(), Logger: quietLogger(), Broker: cfg, Slaves: 1, SlaveHAAddr: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if len(asked) != 1 || asked[0] != dev.Broker.Replication().HAAddr() || asked[0] == "" {
		t.Fatalf("hook asked %q; the master advertises %q", asked, dev.Broker.Replication().HAAddr())
	}
	if got := dev.Slaves[0].Replication().HAMasterAddr(); got != asked[0] {
		t.Fatalf("slave follows %q, want the hook's %q", got, asked[0])
	}
	co := client.ClientOptions{NameServers: []string{dev.NamesrvAddr()}}
	adm, err := client.NewAdmin(co)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(context.Background(), "dev", client.TopicOptions{Queues: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: co, Group: "dev-fill"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 20 {
		sendRetrying(t, p, &client.Message{Topic: "dev", Body: fmt.Appendf(nil, "filled before the second slave %d", i)})
	}
	s, err := dev.AddSlave(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(dev.Slaves) != 2 || s.Config().BrokerID != 2 || len(asked) != 2 {
		t.Fatalf("AddSlave: %d slaves, id %d, hook asked %d times", len(dev.Slaves), s.Config().BrokerID, len(asked))
	}
	waitFor(t, func() bool { return s.Store().WrittenOffset() == dev.Broker.Store().HandedOffset() }, "the added slave caught up")
}

// TestTempDir: without a Dir the cluster makes a temporary one and Close
// removes it; with Keep it stays.
func TestTempDir(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dev, err := Start(Options{Logger: quietLogger(), Keep: keep, Broker: broker.Config{MappedFileSizeCommitLog: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		dir := dev.Dir
		if err := dev.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = os.Stat(dir)
		if keep {
			if err != nil {
				t.Fatalf("Keep: %v", err)
			}
			_ = os.RemoveAll(dir)
		} else if !os.IsNotExist(err) {
			t.Fatalf("temporary dir %s after Close: %v", dir, err)
		}
	}
}
