package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

func init() {
	register(command{name: "cluster", summary: "the clusters' brokers: role, replication state, msgs/s in and out, disk use", run: runCluster})
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
	// InPerSec and OutPerSec are messages stored and delivered per
	// second: the broker's 10 s averages, or over --interval (nil: no
	// answer).
	InPerSec  *float64 `json:"inPerSec,omitempty"`
	OutPerSec *float64 `json:"outPerSec,omitempty"`
	// DiskRatio is the used share of the store's file system, DiskUsed
	// and DiskTotal its bytes (nil: the broker does not say).
	DiskRatio *float64 `json:"diskRatio,omitempty"`
	DiskUsed  int64    `json:"diskUsedBytes,omitempty"`
	DiskTotal int64    `json:"diskTotalBytes,omitempty"`
	Version   string   `json:"version,omitempty"`
	// DamagedRanges are log ranges known damaged and not yet repaired
	// from a peer; CutAcknowledgedBytes what the broker cut, to follow a
	// new master, of what its group acknowledged (lost acknowledged data,
	// kept in its lost+found); UnverifiedBytes what it has not yet read
	// back since it started; CutRefused, that it keeps acknowledged
	// messages its master lacks and does not follow. From its stats (0
	// when it does not say).
	DamagedRanges        int64 `json:"damagedRanges,omitempty"`
	CutAcknowledgedBytes int64 `json:"cutAcknowledgedBytes,omitempty"`
	UnverifiedBytes      int64 `json:"unverifiedBytes,omitempty"`
	CutRefused           bool  `json:"cutRefused,omitempty"`
	stats                map[string]string
	slaves               []protocol.SlaveStat // a master's view of its slaves, from stats
	slavesErr            error                // why stats' slave lines could not be read
	runtime              [2]map[string]string
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
	interval := fs.Duration("interval", 0, "measure msgs/s in and out over this long (default: the brokers' own 10 s averages)")
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
	for _, r := range rows {
		if r.slavesErr != nil {
			fmt.Fprintf(os.Stderr, "samsa cluster: %s: its slaves' replication not shown: %v\n", r.Addr, r.slavesErr)
		}
	}
	runtimeInfo(ctx, a, rows, 0)
	if *interval > 0 {
		select {
		case <-time.After(*interval):
		case <-ctx.Done():
			return ctx.Err()
		}
		runtimeInfo(ctx, a, rows, 1)
	}
	for i := range rows {
		rows[i].fromRuntime()
		rows[i].fromStats()
	}
	if cf.json {
		if rows == nil {
			rows = []clusterBroker{}
		}
		return printJSON(rows)
	}
	tw := table("CLUSTER", "BROKER", "ID", "ROLE", "BROKER ROLE", "ADDRESS", "IN MSG/S", "OUT MSG/S", "DISK", "REPLICATION", "DATA")
	for _, r := range rows {
		row(tw, r.Cluster, r.Broker, strconv.FormatInt(r.ID, 10), r.Role, r.BrokerRole, r.Addr, rate(r.InPerSec), rate(r.OutPerSec),
			r.disk(), r.Replication.String(), r.data())
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
			r.slaves, r.slavesErr = protocol.ParseSlaveStats(stats)
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
		for _, s := range master.slaves {
			if s.Addr == r.Addr {
				r.Replication = &replication{AckOffset: s.AckOffset, BehindBytes: s.BehindBytes, LagMs: s.LagMs, InSync: s.InSync}
			}
		}
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

// runtimeInfo takes every broker's GET_BROKER_RUNTIME_INFO into
// runtime[k], all at once.
func runtimeInfo(ctx context.Context, a *client.Admin, rows []clusterBroker, k int) {
	var wg sync.WaitGroup
	for i := range rows {
		wg.Add(1)
		go func(r *clusterBroker) {
			defer wg.Done()
			if kv, err := a.BrokerRuntimeInfo(ctx, r.Addr); err == nil {
				r.runtime[k] = kv
			}
		}(&rows[i])
	}
	wg.Wait()
}

// fromRuntime fills the rates (from two samples), disk use and version.
func (r *clusterBroker) fromRuntime() {
	first, last := r.runtime[0], r.runtime[1]
	if first == nil {
		return
	}
	num := func(m map[string]string, k string) (float64, bool) {
		v, err := strconv.ParseFloat(m[k], 64)
		return v, err == nil
	}
	r.Version = first["brokerVersionDesc"]
	if v, ok := num(first, "commitLogDiskRatio"); ok {
		r.DiskRatio = &v
		u, _ := num(first, "storeDiskUsedBytes")
		t, _ := num(first, "storeDiskTotalBytes")
		r.DiskUsed, r.DiskTotal = int64(u), int64(t)
	}
	if last == nil {
		// The broker's 10 s averages: putTps, getTransferedTps ("10s 1min 10min").
		for _, p := range []struct {
			key string
			dst **float64
		}{{"putTps", &r.InPerSec}, {"getTransferedTps", &r.OutPerSec}} {
			if f := strings.Fields(first[p.key]); len(f) > 0 {
				if v, err := strconv.ParseFloat(f[0], 64); err == nil {
					*p.dst = &v
				}
			}
		}
		return
	}
	t0, ok0 := num(first, "timestamp")
	t1, ok1 := num(last, "timestamp")
	if !ok0 || !ok1 || t1 <= t0 {
		return
	}
	secs := (t1 - t0) / 1000
	for _, p := range []struct {
		key string
		dst **float64
	}{{"msgPutTotal", &r.InPerSec}, {"msgGetTotal", &r.OutPerSec}} {
		a, okA := num(first, p.key)
		b, okB := num(last, p.key)
		if okA && okB && b >= a {
			v := (b - a) / secs
			*p.dst = &v
		}
	}
}

// fromStats reads the data-safety figures from the broker's stats.
func (r *clusterBroker) fromStats() {
	r.DamagedRanges, _ = strconv.ParseInt(r.stats["store_damaged_ranges"], 10, 64)
	r.CutAcknowledgedBytes, _ = strconv.ParseInt(r.stats["ha_cut_acknowledged_bytes"], 10, 64)
	r.UnverifiedBytes, _ = strconv.ParseInt(r.stats["store_unverified_bytes"], 10, 64)
	r.CutRefused = r.stats["ha_link_cut_refused"] == "1"
}

// data says what is wrong with the broker's data: "ok", or its damaged
// ranges awaiting a repair, what it has still to verify, a refused cut
// and the acknowledged bytes it cut.
func (r *clusterBroker) data() string {
	if r.stats == nil {
		return "-"
	}
	var out []string
	if r.DamagedRanges > 0 {
		out = append(out, fmt.Sprintf("%d damaged ranges awaiting repair", r.DamagedRanges))
	}
	if r.UnverifiedBytes > 0 {
		out = append(out, fmt.Sprintf("verifying: %d bytes left", r.UnverifiedBytes))
	}
	if r.CutRefused {
		out = append(out, "REFUSES to cut acknowledged messages its master lacks (samsa controller elect --unclean accepts the loss)")
	}
	if r.CutAcknowledgedBytes > 0 {
		out = append(out, fmt.Sprintf("LOST %d acknowledged bytes (cut to follow a new master; in lost+found)", r.CutAcknowledgedBytes))
	}
	if len(out) == 0 {
		return "ok"
	}
	return strings.Join(out, "; ")
}

func rate(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

// disk is the store file system's use: "42% of 100 GiB".
func (r *clusterBroker) disk() string {
	if r.DiskRatio == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%% of %s", *r.DiskRatio*100, humanBytes(r.DiskTotal))
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
