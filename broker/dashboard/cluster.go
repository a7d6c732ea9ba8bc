package dashboard

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/samsamq/samsa/protocol"
)

// LocalBroker is this broker as the cluster view needs it.
type LocalBroker struct {
	Cluster    string
	Broker     string
	ID         int64
	BrokerRole string
	Addr       string
	// NameServers are the broker's name servers (none: it runs alone).
	NameServers []string
	// Runtime is its GET_BROKER_RUNTIME_INFO table.
	Runtime map[string]string
	// Slaves are a master's slaves, as it sees them.
	Slaves []Slave
}

// ClusterView is the cluster view: Source says where the list came from.
type ClusterView struct {
	Source  string          `json:"source"`
	Brokers []ClusterBroker `json:"brokers"`
}

// ClusterBroker is one row of the cluster view. Role is what the name
// server's id says (master for id 0), BrokerRole what the broker says of
// itself. The figures are nil when the broker did not answer (Error says
// why).
type ClusterBroker struct {
	Cluster    string   `json:"cluster"`
	Broker     string   `json:"broker"`
	ID         int64    `json:"id"`
	Role       string   `json:"role"`
	BrokerRole string   `json:"brokerRole"`
	Addr       string   `json:"addr"`
	Self       bool     `json:"self"`
	Version    string   `json:"version,omitempty"`
	InPerSec   *float64 `json:"inPerSec,omitempty"` // 10 s averages
	OutPerSec  *float64 `json:"outPerSec,omitempty"`
	DiskRatio  *float64 `json:"diskRatio,omitempty"`
	Written    *int64   `json:"commitLogWritten,omitempty"`
	Slave      *Slave   `json:"replication,omitempty"` // a slave's, as its master sees it
	Error      string   `json:"error,omitempty"`
	slaves     []Slave  // a master's
}

// cluster lists every broker the name servers know, each with what it
// says of itself (GET_BROKER_RUNTIME_INFO) and, for a slave, what its
// master says of it (the master's "stats ha" slave lines). This broker
// answers from its own state; the others are asked all at once, each
// bounded by the Admin's request timeout. With no Admin the view is this
// broker alone.
func (d *Dashboard) cluster(r *http.Request) (any, error) {
	self := d.src.Local()
	if d.admin == nil {
		row := ClusterBroker{Cluster: self.Cluster, Broker: self.Broker, ID: self.ID, Role: roleOfID(self.ID),
			BrokerRole: self.BrokerRole, Addr: self.Addr, Self: true}
		row.fill(self.Runtime, nil)
		src := "this broker only (no name server configured)"
		if len(self.NameServers) > 0 {
			src = "this broker only (the broker was started without a client for its name servers)"
		}
		return ClusterView{Source: src, Brokers: []ClusterBroker{row}}, nil
	}
	ci, from, err := d.admin.ClusterInfoFrom(r.Context())
	if err != nil {
		return nil, &statusError{http.StatusBadGateway, err.Error()}
	}
	rows := []ClusterBroker{}
	for cluster, names := range ci.ClusterAddrTable {
		for _, n := range names {
			for id, addr := range ci.BrokerAddrTable[n].BrokerAddrs {
				rows = append(rows, ClusterBroker{Cluster: cluster, Broker: n, ID: id, Role: roleOfID(id), Addr: addr, Self: addr == self.Addr})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		x, y := rows[i], rows[j]
		if x.Cluster != y.Cluster {
			return x.Cluster < y.Cluster
		}
		if x.Broker != y.Broker {
			return x.Broker < y.Broker
		}
		return x.ID < y.ID
	})
	var wg sync.WaitGroup
	for i := range rows {
		wg.Add(1)
		go func(row *ClusterBroker) {
			defer wg.Done()
			if row.Self {
				row.fill(self.Runtime, nil)
				row.slaves = self.Slaves
				return
			}
			d.ask(r.Context(), row)
		}(&rows[i])
	}
	wg.Wait()
	// A slave's replication, from its master's view (rows are sorted: a
	// group's master, id 0, first).
	var master *ClusterBroker
	for i := range rows {
		row := &rows[i]
		if row.ID == protocol.MasterID {
			master = row
			continue
		}
		if master == nil || master.Cluster != row.Cluster || master.Broker != row.Broker {
			continue
		}
		for _, s := range master.slaves {
			if s.Addr == row.Addr {
				row.Slave = &s
			}
		}
	}
	return ClusterView{Source: "name server " + from, Brokers: rows}, nil
}

// ask fills a row from its broker: its runtime figures and, for a
// master, its slaves.
func (d *Dashboard) ask(ctx context.Context, row *ClusterBroker) {
	kv, err := d.admin.BrokerRuntimeInfo(ctx, row.Addr)
	row.fill(kv, err)
	if err != nil || row.ID != protocol.MasterID {
		return
	}
	stats, err := d.admin.BrokerStats(ctx, row.Addr, "ha")
	if err == nil {
		row.slaves, err = slavesFromStats(stats)
	}
	if err != nil {
		row.Error = "replication state: " + err.Error()
	}
}

func roleOfID(id int64) string {
	if id == protocol.MasterID {
		return "master"
	}
	return "slave"
}

// fill reads a broker's GET_BROKER_RUNTIME_INFO table into the row.
func (r *ClusterBroker) fill(kv map[string]string, err error) {
	if err != nil || kv == nil {
		r.BrokerRole = "?"
		if err != nil {
			r.Error = err.Error()
		}
		return
	}
	r.BrokerRole, r.Version = kv["brokerRole"], kv["brokerVersionDesc"]
	first := func(k string) *float64 { // "10s 1min 10min" averages, or one figure
		if f := strings.Fields(kv[k]); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				return &v
			}
		}
		return nil
	}
	r.InPerSec, r.OutPerSec, r.DiskRatio = first("putTps"), first("getTransferedTps"), first("commitLogDiskRatio")
	if w, err := strconv.ParseInt(kv["commitLogMaxOffset"], 10, 64); err == nil {
		r.Written = &w
	}
}

// slavesFromStats reads a master's slave:<addr>:<field> lines.
func slavesFromStats(stats []protocol.Stat) ([]Slave, error) {
	slaves, err := protocol.ParseSlaveStats(stats)
	if err != nil {
		return nil, err
	}
	out := make([]Slave, 0, len(slaves))
	for _, s := range slaves {
		out = append(out, Slave{Addr: s.Addr, AckOffset: s.AckOffset, BehindBytes: s.BehindBytes, LagMs: s.LagMs, InSync: s.InSync})
	}
	return out, nil
}
