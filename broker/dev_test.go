package broker

import (
	"testing"
)

// TestDevSlaveHAAddr: the hook gets the master's replication address once
// it listens, and a slave follows the address the hook returns, both the
// slaves StartDev starts and one AddSlave adds later to a filled master.
func TestDevSlaveHAAddr(t *testing.T) {
	var asked []string
	hook := func(masterHA string) (string, error) {
		asked = append(asked, masterHA)
		return masterHA, nil
	}
	cfg := Config{BrokerRole: AsyncMaster, MappedFileSizeCommitLog: 1 << 20}
	dev, err := StartDev(DevOptions{Dir: t.TempDir(), Logger: quietLogger(), Broker: cfg, Slaves: 1, SlaveHAAddr: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if len(asked) != 1 || asked[0] != dev.Broker.HAAddr() || asked[0] == "" {
		t.Fatalf("hook asked %q; the master advertises %q", asked, dev.Broker.HAAddr())
	}
	if got := dev.Slaves[0].HAMasterAddr(); got != asked[0] {
		t.Fatalf("slave follows %q, want the hook's %q", got, asked[0])
	}
	c := dialRaw(t, dev.BrokerAddr())
	c.call(createTopicReq("dev", 1))
	for i := 0; i < 20; i++ {
		c.call(sendReq("dev", 0, []byte("filled before the second slave"), nil))
	}
	s, err := dev.AddSlave(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(dev.Slaves) != 2 || s.Config().BrokerID != 2 || len(asked) != 2 {
		t.Fatalf("AddSlave: %d slaves, id %d, hook asked %d times", len(dev.Slaves), s.Config().BrokerID, len(asked))
	}
	waitLong(t, func() bool { return s.Store().WrittenOffset() == dev.Broker.Store().HandedOffset() }, "the added slave caught up")
}
