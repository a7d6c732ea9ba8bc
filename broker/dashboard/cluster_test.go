package dashboard

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// TestClusterAlone: without an Admin the view is this broker, from its
// own runtime table, and says why it is alone.
func TestClusterAlone(t *testing.T) {
	local := LocalBroker{Cluster: "c", Broker: "broker-a", ID: 0, BrokerRole: "ASYNC_MASTER", Addr: "127.0.0.1:10911",
		Runtime: map[string]string{"brokerRole": "ASYNC_MASTER", "brokerVersionDesc": "v1", "putTps": "1.5 2.0 3.0",
			"getTransferedTps": "4.25 0 0", "commitLogDiskRatio": "0.5", "commitLogMaxOffset": "1234"}}
	s := server(t, &fakeSource{local: local}, Options{})
	var v ClusterView
	get(t, s, "/ui/api/cluster", &v)
	if len(v.Brokers) != 1 || !strings.Contains(v.Source, "no name server configured") {
		t.Fatalf("cluster: %+v", v)
	}
	r := v.Brokers[0]
	if !r.Self || r.Role != "master" || r.BrokerRole != "ASYNC_MASTER" || r.Version != "v1" || r.Addr != local.Addr ||
		r.InPerSec == nil || *r.InPerSec != 1.5 || r.OutPerSec == nil || *r.OutPerSec != 4.25 || r.DiskRatio == nil || *r.DiskRatio != 0.5 ||
		r.Written == nil || *r.Written != 1234 || r.Error != "" {
		t.Fatalf("row: %+v", r)
	}

	local.ID, local.NameServers, local.Runtime = 1, []string{"ns:9876"}, map[string]string{"putTps": "not a number"}
	s = server(t, &fakeSource{local: local}, Options{})
	v = ClusterView{}
	get(t, s, "/ui/api/cluster", &v)
	if r := v.Brokers[0]; len(v.Brokers) != 1 || !strings.Contains(v.Source, "without a client") || r.Role != "slave" || r.InPerSec != nil || r.Written != nil {
		t.Fatalf("slave with name servers, no Admin: %+v", v)
	}
}

// twoGroups is a cluster of two master-slave groups; broker-a's slave is
// this broker.
func twoGroups() (*fakeAdmin, LocalBroker) {
	info := &protocol.ClusterInfo{
		ClusterAddrTable: map[string][]string{"c": {"broker-b", "broker-a"}},
		BrokerAddrTable: map[string]protocol.BrokerData{
			"broker-a": {Cluster: "c", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "a0:1", 1: "a1:1"}},
			"broker-b": {Cluster: "c", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "b0:1", 1: "b1:1"}},
		},
	}
	slave := protocol.SlaveStat{Addr: "b1:1", AckOffset: 90, BehindBytes: 10, LagMs: 3, InSync: true}.Format()
	admin := &fakeAdmin{info: info, from: "ns:9876",
		runtime: map[string]map[string]string{
			"a0:1": {"brokerRole": "SYNC_MASTER", "brokerVersionDesc": "v1", "putTps": "10.0 1 1"},
			"b0:1": {"brokerRole": "ASYNC_MASTER", "brokerVersionDesc": "v1", "commitLogMaxOffset": "100"},
			// b1:1 does not answer
		},
		stats: map[string][]protocol.Stat{
			"a0:1": {{Name: "ha_role", Value: "SYNC_MASTER"}, {Name: "slave:a1:1:in_sync", Value: "2"}}, // malformed
			"b0:1": append([]protocol.Stat{{Name: "ha_role", Value: "ASYNC_MASTER"}}, slave...),
		},
	}
	local := LocalBroker{Cluster: "c", Broker: "broker-a", ID: 1, BrokerRole: "SLAVE", Addr: "a1:1", NameServers: []string{"ns:9876"},
		Runtime: map[string]string{"brokerRole": "SLAVE", "brokerVersionDesc": "v1"}}
	return admin, local
}

// TestClusterThroughAdmin: the view lists the name server's brokers
// sorted, says which name server answered, asks each other broker for
// its runtime table and each master for its slaves, answers for this
// broker from its own state, and shows what failed in the row it
// failed for.
func TestClusterThroughAdmin(t *testing.T) {
	admin, local := twoGroups()
	s := server(t, &fakeSource{local: local}, Options{Admin: admin})
	var v ClusterView
	get(t, s, "/ui/api/cluster", &v)
	if v.Source != "name server ns:9876" || len(v.Brokers) != 4 {
		t.Fatalf("cluster: %+v", v)
	}
	a0, a1, b0, b1 := v.Brokers[0], v.Brokers[1], v.Brokers[2], v.Brokers[3]
	if a0.Addr != "a0:1" || a1.Addr != "a1:1" || b0.Addr != "b0:1" || b1.Addr != "b1:1" {
		t.Fatalf("order: %+v", v.Brokers)
	}
	if a0.Role != "master" || a0.BrokerRole != "SYNC_MASTER" || a0.InPerSec == nil || *a0.InPerSec != 10 || a0.Self ||
		!strings.Contains(a0.Error, "replication state") {
		t.Errorf("broker-a master (malformed slave lines): %+v", a0)
	}
	if !a1.Self || a1.Role != "slave" || a1.BrokerRole != "SLAVE" || a1.Slave != nil || a1.Error != "" {
		t.Errorf("this broker: %+v", a1)
	}
	if admin.askedOf("a1:1") {
		t.Error("the Admin was asked about this broker")
	}
	if b0.BrokerRole != "ASYNC_MASTER" || b0.Written == nil || *b0.Written != 100 || b0.Error != "" {
		t.Errorf("broker-b master: %+v", b0)
	}
	if b1.BrokerRole != "?" || !strings.Contains(b1.Error, "connection refused") || b1.Slave == nil ||
		*b1.Slave != (Slave{Addr: "b1:1", AckOffset: 90, BehindBytes: 10, LagMs: 3, InSync: true}) {
		t.Errorf("broker-b slave (no answer of its own; its master's view): %+v", b1)
	}
}

// TestClusterMasterIsSelf: a master's slaves come from this broker's own
// replication state when the master is this broker.
func TestClusterMasterIsSelf(t *testing.T) {
	admin, local := twoGroups()
	local.ID, local.Addr, local.BrokerRole = 0, "a0:1", "SYNC_MASTER"
	local.Slaves = []Slave{{Addr: "a1:1", AckOffset: 5, InSync: false}}
	s := server(t, &fakeSource{local: local}, Options{Admin: admin})
	var v ClusterView
	get(t, s, "/ui/api/cluster", &v)
	if a0, a1 := v.Brokers[0], v.Brokers[1]; !a0.Self || a0.Error != "" || a1.Slave == nil || a1.Slave.AckOffset != 5 || a1.Slave.InSync {
		t.Fatalf("cluster: %+v", v)
	}
}

// TestClusterNameServersDown: no cluster table is a 502 with the
// Admin's error (which names the name servers).
func TestClusterNameServersDown(t *testing.T) {
	admin := &fakeAdmin{infoErr: errors.New("client: no name server answered: name server ns:9876: connection refused")}
	s := server(t, &fakeSource{}, Options{Admin: admin})
	if msg := getErr(t, s, "/ui/api/cluster", http.StatusBadGateway); !strings.Contains(msg, "name server ns:9876") {
		t.Fatalf("error %q", msg)
	}
}

// TestSlavesFromStats reads a master's slave lines, addresses with
// colons included, and ignores the rest; a malformed slave line is an
// error, not a slave with zeroes.
func TestSlavesFromStats(t *testing.T) {
	stats := []protocol.Stat{
		{Name: "ha_role", Value: "ASYNC_MASTER"},
		{Name: "slave:127.0.0.1:10912:ack_offset", Value: "100"},
		{Name: "slave:127.0.0.1:10912:behind_bytes", Value: "20"},
		{Name: "slave:127.0.0.1:10912:lag_ms", Value: "5"},
		{Name: "slave:127.0.0.1:10912:in_sync", Value: "1"},
		{Name: "slave:[::1]:10913:ack_offset", Value: "7"},
		{Name: "slave:[::1]:10913:in_sync", Value: "0"},
	}
	got, err := slavesFromStats(stats)
	want := []Slave{{Addr: "127.0.0.1:10912", AckOffset: 100, BehindBytes: 20, LagMs: 5, InSync: true}, {Addr: "[::1]:10913", AckOffset: 7}}
	if err != nil || len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("slaves %+v, %v; want %+v", got, err, want)
	}
	if got, err := slavesFromStats(stats[:1]); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no slave: %#v, %v; want an empty list", got, err)
	}
	if got, err := slavesFromStats(append(stats, protocol.Stat{Name: "slave:nofield", Value: "1"})); err == nil {
		t.Fatalf("slave:nofield read as %+v", got)
	}
}
