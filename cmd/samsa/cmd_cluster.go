package main

import (
	"flag"
	"fmt"
	"sort"
	"strconv"

	"github.com/samsamq/samsa/protocol"
)

func init() {
	register(command{name: "cluster", summary: "list the clusters' brokers, roles and addresses", run: runCluster})
}

// clusterBroker is one row of `samsa cluster`.
type clusterBroker struct {
	Cluster string `json:"cluster"`
	Broker  string `json:"broker"`
	ID      int64  `json:"id"`
	Role    string `json:"role"`
	Addr    string `json:"addr"`
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
				rows = append(rows, clusterBroker{cluster, n, id, role, addr})
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
	if cf.json {
		if rows == nil {
			rows = []clusterBroker{}
		}
		return printJSON(rows)
	}
	tw := table("CLUSTER", "BROKER", "ID", "ROLE", "ADDRESS")
	for _, r := range rows {
		row(tw, r.Cluster, r.Broker, strconv.FormatInt(r.ID, 10), r.Role, r.Addr)
	}
	return tw.Flush()
}
