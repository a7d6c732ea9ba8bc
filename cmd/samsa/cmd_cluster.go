package main

import (
	"context"
	"flag"
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
// reports of itself (its brokerRole; "?" when it does not answer).
type clusterBroker struct {
	Cluster    string `json:"cluster"`
	Broker     string `json:"broker"`
	ID         int64  `json:"id"`
	Role       string `json:"role"`
	BrokerRole string `json:"brokerRole"`
	Addr       string `json:"addr"`
}

func runCluster(args []string) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
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
	if cf.json {
		if rows == nil {
			rows = []clusterBroker{}
		}
		return printJSON(rows)
	}
	tw := table("CLUSTER", "BROKER", "ID", "ROLE", "BROKER ROLE", "ADDRESS")
	for _, r := range rows {
		row(tw, r.Cluster, r.Broker, strconv.FormatInt(r.ID, 10), r.Role, r.BrokerRole, r.Addr)
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
			for _, s := range stats {
				if s.Name == "broker_role" {
					r.BrokerRole = s.Value
				}
			}
		}(&rows[i])
	}
	wg.Wait()
}
