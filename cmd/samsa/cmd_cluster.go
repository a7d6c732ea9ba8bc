package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

func init() {
	register(command{name: "cluster", summary: "list the clusters' brokers (masters and slaves), roles and addresses", run: runCluster})
}

// clusterBroker is one row of `samsa cluster`: Role is what the name
// server's id says (master for 0, else slave), BrokerRole what the broker
// reports of itself (its brokerRole; "?" when it does not answer). A
// slave's replication figures are its master's view of it (text stats
// slave:<addr>:...): nil when the master does not report it.
type clusterBroker struct {
	Cluster     string       `json:"cluster"`
	Broker      string       `json:"broker"`
	ID          int64        `json:"id"`
	Role        string       `json:"role"`
	BrokerRole  string       `json:"brokerRole"`
	Addr        string       `json:"addr"`
	Replication *replication `json:"replication,omitempty"`
	stats       map[string]string
}

// replication is a slave as its master sees it.
type replication struct {
	AckOffset   int64 `json:"ackOffset"`
	BehindBytes int64 `json:"behindBytes"`
	LagMs       int64 `json:"lagMs"`
	InSync      bool  `json:"inSync"`
}

func runCluster(args []string) error {
	fs := newFlagSet("cluster", "", "The clusters' brokers: role, replication, rates, disk use.")
	cf := addClientFlags(fs)
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return err
	}
	var rows []clusterBroker
	for cluster, names := range ci.ClusterAddrTable {
		for _, n := range names {
			for id, addr := range ci.BrokerAddrTable[n].BrokerAddrs {
				role := "master"
				if id != protocol.MasterID {
					role = "slave"
				}
				rows = append(rows, clusterBroker{Cluster: cluster, Broker: n, ID: id, Role: role, Addr: addr})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.Broker != b.Broker {
			return a.Broker < b.Broker
		}
		return a.ID < b.ID
	})
	brokerRoles(ctx, a, rows)
	slaveReplication(rows)
	if cf.json {
		if rows == nil {
			rows = []clusterBroker{}
		}
		return printJSON(rows)
	}
	tw := table("CLUSTER", "BROKER", "ID", "ROLE", "BROKER ROLE", "ADDRESS", "REPLICATION")
	for _, r := range rows {
		row(tw, r.Cluster, r.Broker, strconv.FormatInt(r.ID, 10), r.Role, r.BrokerRole, r.Addr, r.Replication.String())
	}
	return tw.Flush()
}

// brokerRoles asks every broker for its brokerRole (the text stats'
// broker_role), all at once, each bounded by the request timeout.
func brokerRoles(ctx context.Context, a *client.Admin, rows []clusterBroker) {
	var wg sync.WaitGroup
	for i := range rows {
		wg.Add(1)
		go func(r *clusterBroker) {
			defer wg.Done()
			r.BrokerRole = "?"
			stats, err := a.BrokerStats(ctx, r.Addr)
			if err != nil {
				return
			}
			r.stats = make(map[string]string, len(stats))
			for _, s := range stats {
				r.stats[s.Name] = s.Value
			}
			if v, ok := r.stats["broker_role"]; ok {
				r.BrokerRole = v
			}
		}(&rows[i])
	}
	wg.Wait()
}

// slaveReplication fills each slave row's replication figures from its
// master's stats (rows sorted: a group's master, id 0, comes first).
func slaveReplication(rows []clusterBroker) {
	var master *clusterBroker
	for i := range rows {
		r := &rows[i]
		if r.ID == protocol.MasterID {
			master = r
			continue
		}
		if master == nil || master.Cluster != r.Cluster || master.Broker != r.Broker || master.stats == nil {
			continue
		}
		p := "slave:" + r.Addr + ":"
		if _, ok := master.stats[p+"ack_offset"]; !ok {
			continue
		}
		num := func(k string) int64 { n, _ := strconv.ParseInt(master.stats[p+k], 10, 64); return n }
		r.Replication = &replication{AckOffset: num("ack_offset"), BehindBytes: num("behind_bytes"), LagMs: num("lag_ms"),
			InSync: master.stats[p+"in_sync"] == "1"}
	}
}

func (r *replication) String() string {
	if r == nil {
		return "-"
	}
	state := "in sync"
	if !r.InSync {
		state = "NOT in sync"
	}
	return fmt.Sprintf("%s, %d bytes / %d ms behind", state, r.BehindBytes, r.LagMs)
}
