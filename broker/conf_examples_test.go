package broker

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestExampleConfs: conf/broker-a.conf and conf/broker-a-s.conf (the
// README's master/slave pair) parse with no unknown key, validate, and
// fit together: one broker name, master id 0 and a slave, their own ports
// and stores, the slave following the master's haListenPort.
func TestExampleConfs(t *testing.T) {
	load := func(name string) Config {
		t.Helper()
		f, err := os.Open(filepath.Join("..", "conf", name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var c Config
		unknown, err := c.ParseProperties(f)
		if err != nil || len(unknown) > 0 {
			t.Fatalf("%s: %v, unknown keys %v", name, err, unknown)
		}
		c.EnsureDefaults()
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return c
	}
	m, s := load("broker-a.conf"), load("broker-a-s.conf")
	if m.BrokerRole != SyncMaster && m.BrokerRole != AsyncMaster || m.BrokerID != 0 {
		t.Fatalf("master: role %s, id %d", m.BrokerRole, m.BrokerID)
	}
	if s.BrokerRole != Slave || s.BrokerID < 1 {
		t.Fatalf("slave: role %s, id %d", s.BrokerRole, s.BrokerID)
	}
	if m.BrokerName != s.BrokerName || m.BrokerClusterName != s.BrokerClusterName {
		t.Fatalf("names: %s/%s vs %s/%s", m.BrokerClusterName, m.BrokerName, s.BrokerClusterName, s.BrokerName)
	}
	if m.ListenPort == s.ListenPort || m.StorePathRootDir == s.StorePathRootDir {
		t.Fatalf("shared: ports %d, %d; stores %s, %s", m.ListenPort, s.ListenPort, m.StorePathRootDir, s.StorePathRootDir)
	}
	for _, p := range []int{m.ListenPort, m.HAListenPort} {
		if p == s.ListenPort || p == s.HAListenPort {
			t.Fatalf("port %d is the master's and the slave's", p)
		}
	}
	_, port, err := net.SplitHostPort(s.HAMasterAddress)
	if err != nil || port != strconv.Itoa(m.HAListenPort) {
		t.Fatalf("slave follows %q, the master's haListenPort is %d", s.HAMasterAddress, m.HAListenPort)
	}
	if len(m.NamesrvAddrs) == 0 || len(s.NamesrvAddrs) == 0 || m.NamesrvAddrs[0] != s.NamesrvAddrs[0] {
		t.Fatalf("name servers: %v vs %v", m.NamesrvAddrs, s.NamesrvAddrs)
	}
}
