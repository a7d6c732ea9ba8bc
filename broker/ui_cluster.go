package broker

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/protocol"
)

// uiOverview is this broker at a glance; the page polls it for the live
// charts (rates from the deltas of the totals between two polls).
type uiOverview struct {
	BrokerName  string       `json:"brokerName"`
	Cluster     string       `json:"cluster"`
	BrokerID    int64        `json:"brokerId"`
	Role        string       `json:"role"`
	Addr        string       `json:"addr"`
	Version     string       `json:"version"`
	MasterAddr  string       `json:"masterAddr,omitempty"`
	StartedMs   int64        `json:"startedMs"`
	NowMs       int64        `json:"nowMs"`
	PutTotal    int64        `json:"putTotal"`
	GetTotal    int64        `json:"getTotal"`
	PutBytes    int64        `json:"putBytes"`
	GetBytes    int64        `json:"getBytes"`
	PutTps      [3]float64   `json:"putTps"` // 10 s, 1 min, 10 min
	GetTps      [3]float64   `json:"getTps"`
	Connections int64        `json:"connections"`
	Written     int64        `json:"commitLogWritten"`
	DiskRatio   *float64     `json:"diskRatio,omitempty"`
	NameServers []string     `json:"nameServers"`
	Slaves      []uiSlave    `json:"slaves"`
	Topics      []uiTopicCnt `json:"topics"`
}

// uiTopicCnt is a topic's message counts since the broker started.
type uiTopicCnt struct {
	Topic string `json:"topic"`
	Puts  int64  `json:"puts"`
	Gets  int64  `json:"gets"`
}

// uiSlave is a slave as its master sees it.
type uiSlave struct {
	Addr        string `json:"addr"`
	AckOffset   int64  `json:"ackOffset"`
	BehindBytes int64  `json:"behindBytes"`
	LagMs       int64  `json:"lagMs"`
	InSync      bool   `json:"inSync"`
}

func (u *uiServer) overview(*http.Request) (any, error) {
	b := u.b
	put, get := b.rates.rates()
	o := uiOverview{BrokerName: b.cfg.BrokerName, Cluster: b.cfg.BrokerClusterName, BrokerID: b.cfg.BrokerID,
		Role: string(b.cfg.BrokerRole), Addr: b.Addr(), Version: b.cfg.Version, StartedMs: b.started.UnixMilli(),
		NowMs: b.cfg.Clock().UnixMilli(), PutTotal: b.stats.cmdPut.Load(), GetTotal: b.stats.cmdGet.Load(),
		PutBytes: b.stats.putBytes.Load(), GetBytes: b.stats.getBytes.Load(), PutTps: put, GetTps: get,
		Connections: b.stats.currConns.Load(), Written: b.store.Metrics().WrittenOffset,
		NameServers: append([]string{}, b.cfg.NamesrvAddrs...), Slaves: u.localSlaves(), Topics: []uiTopicCnt{}}
	if b.isSlave() {
		o.MasterAddr = b.MasterAddr()
	}
	if used, total, err := diskUsage(b.cfg.StorePathRootDir); err == nil && total > 0 {
		r := float64(used) / float64(total)
		o.DiskRatio = &r
	}
	for _, t := range b.stats.topicSnapshot() {
		o.Topics = append(o.Topics, uiTopicCnt{Topic: t.Topic, Puts: t.Puts, Gets: t.Gets})
	}
	return o, nil
}

func (u *uiServer) localSlaves() []uiSlave {
	out := []uiSlave{}
	for _, s := range u.b.Slaves() {
		out = append(out, uiSlave{Addr: s.Addr, AckOffset: s.AckOffset, BehindBytes: s.Behind, LagMs: s.LagTime.Milliseconds(), InSync: s.InSync})
	}
	return out
}

// uiClusterBroker is one row of the cluster view. Role is what the name
// server's id says (master for id 0), BrokerRole what the broker says of
// itself. The figures are nil when the broker did not answer (Error says
// why).
type uiClusterBroker struct {
	Cluster    string    `json:"cluster"`
	Broker     string    `json:"broker"`
	ID         int64     `json:"id"`
	Role       string    `json:"role"`
	BrokerRole string    `json:"brokerRole"`
	Addr       string    `json:"addr"`
	Self       bool      `json:"self"`
	Version    string    `json:"version,omitempty"`
	InPerSec   *float64  `json:"inPerSec,omitempty"` // 10 s averages
	OutPerSec  *float64  `json:"outPerSec,omitempty"`
	DiskRatio  *float64  `json:"diskRatio,omitempty"`
	Written    *int64    `json:"commitLogWritten,omitempty"`
	Slave      *uiSlave  `json:"replication,omitempty"` // a slave's, as its master sees it
	Error      string    `json:"error,omitempty"`
	slaves     []uiSlave // a master's
}

type kvAnswer map[string]string

// uiCluster is the cluster view: Source says where the list came from.
type uiCluster struct {
	Source  string            `json:"source"`
	Brokers []uiClusterBroker `json:"brokers"`
}

func (u *uiServer) cluster(*http.Request) (any, error) {
	b := u.b
	if len(b.cfg.NamesrvAddrs) == 0 {
		row := uiClusterBroker{Cluster: b.cfg.BrokerClusterName, Broker: b.cfg.BrokerName, ID: b.cfg.BrokerID,
			BrokerRole: string(b.cfg.BrokerRole), Addr: b.Addr(), Self: true}
		row.Role = roleOfID(row.ID)
		row.fill(u.localRuntime(), nil)
		return uiCluster{Source: "this broker only (no name server configured)", Brokers: []uiClusterBroker{row}}, nil
	}
	ci, from, err := u.clusterInfo()
	if err != nil {
		return nil, &uiErr{http.StatusBadGateway, err.Error()}
	}
	rows := []uiClusterBroker{}
	for cluster, names := range ci.ClusterAddrTable {
		for _, n := range names {
			for id, addr := range ci.BrokerAddrTable[n].BrokerAddrs {
				rows = append(rows, uiClusterBroker{Cluster: cluster, Broker: n, ID: id, Role: roleOfID(id), Addr: addr, Self: addr == b.Addr()})
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
		go func(r *uiClusterBroker) {
			defer wg.Done()
			u.ask(r)
		}(&rows[i])
	}
	wg.Wait()
	// A slave's replication, from its master's view (rows are sorted: a
	// group's master, id 0, first).
	var master *uiClusterBroker
	for i := range rows {
		r := &rows[i]
		if r.ID == protocol.MasterID {
			master = r
			continue
		}
		if master == nil || master.Cluster != r.Cluster || master.Broker != r.Broker {
			continue
		}
		for _, s := range master.slaves {
			if s.Addr == r.Addr {
				r.Slave = &s
			}
		}
	}
	return uiCluster{Source: "name server " + from, Brokers: rows}, nil
}

func roleOfID(id int64) string {
	if id == protocol.MasterID {
		return "master"
	}
	return "slave"
}

// clusterInfo asks the name servers in turn for GET_BROKER_CLUSTER_INFO.
func (u *uiServer) clusterInfo() (*protocol.ClusterInfo, string, error) {
	var errs []error
	for _, ns := range u.b.cfg.NamesrvAddrs {
		resp, err := u.rpc.call(ns, protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil), uiCallTimeout)
		if err == nil && resp.Code != protocol.Success {
			err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
		}
		if err == nil {
			var ci protocol.ClusterInfo
			if err = protocol.UnmarshalBody(resp.Body, &ci); err == nil {
				return &ci, ns, nil
			}
		}
		errs = append(errs, fmt.Errorf("name server %s: %w", ns, err))
	}
	return nil, "", fmt.Errorf("cluster info: %w", errors.Join(errs...))
}

// ask fills a row from its broker: its runtime info and, for a master,
// its slaves. This broker answers from its own state.
func (u *uiServer) ask(r *uiClusterBroker) {
	if r.Self {
		r.fill(u.localRuntime(), nil)
		r.slaves = u.localSlaves()
		return
	}
	resp, err := u.rpc.call(r.Addr, protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil), uiCallTimeout)
	if err == nil && resp.Code != protocol.Success {
		err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
	}
	var kv protocol.KVTable
	if err == nil {
		err = protocol.UnmarshalBody(resp.Body, &kv)
	}
	r.fill(kv.Table, err)
	if err == nil && r.ID == protocol.MasterID {
		r.slaves, err = u.remoteSlaves(r.Addr)
		if err != nil {
			r.Error = "replication state: " + err.Error()
		}
	}
}

// localRuntime is this broker's GET_BROKER_RUNTIME_INFO table.
func (u *uiServer) localRuntime() kvAnswer {
	resp := u.b.processGetBrokerRuntimeInfo(nil, protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	var kv protocol.KVTable
	if resp.Code != protocol.Success || protocol.UnmarshalBody(resp.Body, &kv) != nil {
		return nil
	}
	return kv.Table
}

func (r *uiClusterBroker) fill(kv kvAnswer, err error) {
	if err != nil || kv == nil {
		r.BrokerRole = "?"
		if err != nil {
			r.Error = err.Error()
		}
		return
	}
	r.BrokerRole, r.Version = kv["brokerRole"], kv["brokerVersionDesc"]
	first := func(k string) *float64 {
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

// remoteSlaves reads a master's slaves from its text stats ("stats ha"
// on its remoting port, after "auth" when the broker has an account).
func (u *uiServer) remoteSlaves(addr string) ([]uiSlave, error) {
	nc, err := netx.ClientConn(&net.Dialer{Timeout: uiCallTimeout}, addr, u.b.net.tlsClient)
	if err != nil {
		return nil, err
	}
	defer func() { _ = nc.Close() }()                 // a read-only exchange: nothing to lose
	_ = nc.SetDeadline(time.Now().Add(uiCallTimeout)) // a failure shows as the exchange's error
	br := bufio.NewReader(nc)
	if ak := u.b.cfg.AccessKey; ak != "" {
		if _, err := fmt.Fprintf(nc, "auth %s %s\r\n", ak, u.b.cfg.SecretKey); err != nil {
			return nil, err
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(line) != "OK" {
			return nil, fmt.Errorf("stats auth: %s", strings.TrimSpace(line))
		}
	}
	if _, err := nc.Write([]byte("stats ha\r\n")); err != nil {
		return nil, err
	}
	stats, err := protocol.ReadStats(br)
	if err != nil {
		return nil, err
	}
	return slavesFromStats(stats)
}

// slavesFromStats reads a master's slave:<addr>:<field> lines.
func slavesFromStats(stats []protocol.Stat) ([]uiSlave, error) {
	slaves, err := protocol.ParseSlaveStats(stats)
	if err != nil {
		return nil, err
	}
	out := make([]uiSlave, 0, len(slaves))
	for _, s := range slaves {
		out = append(out, uiSlave{Addr: s.Addr, AckOffset: s.AckOffset, BehindBytes: s.BehindBytes, LagMs: s.LagMs, InSync: s.InSync})
	}
	return out, nil
}
