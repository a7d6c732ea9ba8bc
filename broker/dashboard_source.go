package broker

import (
	"net/http"
	"time"

	"github.com/samsamq/samsa/broker/dashboard"
	"github.com/samsamq/samsa/protocol"
)

// The dashboard (package broker/dashboard) on the admin listener, at
// /ui/: dashboardSource answers its views from the broker's state
// (this file and dashboard_source_*.go); the cluster view's requests to
// other brokers go through the Admin that Config.DashboardAdmin makes.

// dashboardCallTimeout bounds each request the cluster view sends to a
// name server or broker.
const dashboardCallTimeout = 3 * time.Second

// mountDashboard registers the dashboard on mux; close the returned
// Dashboard when the admin listener closes.
func mountDashboard(b *Broker, mux *http.ServeMux, listenAddr string) (*dashboard.Dashboard, error) {
	o := dashboard.Options{Source: dashboardSource{b}, ListenAddr: listenAddr}
	if b.acl != nil {
		o.AdminAccount = b.acl.adminCredentials
	}
	if len(b.cfg.NamesrvAddrs) > 0 && b.cfg.DashboardAdmin != nil {
		a, err := b.cfg.DashboardAdmin(dashboard.AdminOptions{NameServers: b.cfg.NamesrvAddrs, TLS: b.net.tlsClient,
			AccessKey: b.cfg.AccessKey, SecretKey: b.cfg.SecretKey, Timeout: dashboardCallTimeout, Logger: b.log})
		if err != nil {
			return nil, err
		}
		o.Admin = a
	}
	d, err := dashboard.New(o)
	if err != nil {
		if o.Admin != nil {
			_ = o.Admin.Close() // nothing sent yet
		}
		return nil, err
	}
	d.Register(mux)
	return d, nil
}

// dashboardSource is the broker as the dashboard's Source. It reads the
// broker's state; a reset's offsets are all it changes.
type dashboardSource struct{ b *Broker }

func (s dashboardSource) Overview() dashboard.Overview {
	b := s.b
	put, get := b.rates.rates()
	o := dashboard.Overview{BrokerName: b.cfg.BrokerName, Cluster: b.cfg.BrokerClusterName, BrokerID: b.cfg.BrokerID,
		Role: string(b.cfg.BrokerRole), Addr: b.Addr(), Version: b.cfg.Version, StartedMs: b.started.UnixMilli(),
		NowMs: b.cfg.Clock().UnixMilli(), PutTotal: b.stats.cmdPut.Load(), GetTotal: b.stats.cmdGet.Load(),
		PutBytes: b.stats.putBytes.Load(), GetBytes: b.stats.getBytes.Load(), PutTps: put, GetTps: get,
		Connections: b.stats.currConns.Load(), Written: b.store.Metrics().WrittenOffset,
		NameServers: append([]string{}, b.cfg.NamesrvAddrs...), Slaves: s.slaves()}
	if b.repl.isSlave() {
		o.MasterAddr = b.repl.MasterAddr()
	}
	if used, total, err := diskUsage(b.cfg.StorePathRootDir); err == nil && total > 0 {
		r := float64(used) / float64(total)
		o.DiskRatio = &r
	}
	for _, t := range b.stats.topicSnapshot() {
		o.Topics = append(o.Topics, dashboard.TopicCount{Topic: t.Topic, Puts: t.Puts, Gets: t.Gets})
	}
	return o
}

func (s dashboardSource) Local() dashboard.LocalBroker {
	b := s.b
	l := dashboard.LocalBroker{Cluster: b.cfg.BrokerClusterName, Broker: b.cfg.BrokerName, ID: b.cfg.BrokerID,
		BrokerRole: string(b.cfg.BrokerRole), Addr: b.Addr(), NameServers: append([]string{}, b.cfg.NamesrvAddrs...), Slaves: s.slaves()}
	resp := b.mqadmin.handleGetBrokerRuntimeInfo(nil, protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	var kv protocol.KVTable
	if resp.Code == protocol.Success && protocol.UnmarshalBody(resp.Body, &kv) == nil {
		l.Runtime = kv.Table
	}
	return l
}

// slaves are a master's slaves, as its replication sees them.
func (s dashboardSource) slaves() []dashboard.Slave {
	var out []dashboard.Slave
	for _, sl := range s.b.repl.Slaves() {
		out = append(out, dashboard.Slave{Addr: sl.Addr, AckOffset: sl.AckOffset, BehindBytes: sl.Behind, LagMs: sl.LagTime.Milliseconds(), InSync: sl.InSync})
	}
	return out
}

func (s dashboardSource) Topics() []dashboard.Topic {
	b := s.b
	counts := map[string]topicStat{}
	for _, t := range b.stats.topicSnapshot() {
		counts[t.Topic] = t
	}
	var out []dashboard.Topic
	for _, name := range b.topics.names() {
		tc, ok := b.topics.get(name)
		if !ok {
			continue
		}
		t := dashboard.Topic{Name: name, ReadQueues: tc.ReadQueueNums, WriteQueues: tc.WriteQueueNums, Perm: tc.Perm, Order: tc.Order,
			Puts: counts[name].Puts, Gets: counts[name].Gets}
		for i := range int32(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
			lo, hi := max(b.store.MinQueueOffset(name, i), 0), max(b.store.MaxQueueOffset(name, i), 0)
			t.Messages += max(hi-lo, 0)
			t.MaxTotal += hi
		}
		out = append(out, t)
	}
	return out
}

func (s dashboardSource) Topic(name string) (dashboard.TopicDetail, error) {
	b := s.b
	tc, ok := b.topics.get(name)
	if !ok {
		return dashboard.TopicDetail{}, dashboard.NotFound("topic %q does not exist on this broker", name)
	}
	d := dashboard.TopicDetail{Topic: dashboard.Topic{Name: name, ReadQueues: tc.ReadQueueNums, WriteQueues: tc.WriteQueueNums,
		Perm: tc.Perm, Order: tc.Order}, Groups: b.offsets.GroupsOf(name)}
	for _, t := range b.stats.topicSnapshot() { // not stats.topic: that would add a counter
		if t.Topic == name {
			d.Puts, d.Gets = t.Puts, t.Gets
		}
	}
	for i := range int32(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
		q := dashboard.Queue{Queue: i, MinOffset: max(b.store.MinQueueOffset(name, i), 0), MaxOffset: max(b.store.MaxQueueOffset(name, i), 0)}
		if q.MaxOffset > 0 {
			q.LastStoreTime = storeTimeAt(b.store, name, i, q.MaxOffset-1)
		}
		d.Queues = append(d.Queues, q)
	}
	return d, nil
}
