package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/loadgen"
	"github.com/samsamq/samsa/protocol"
)

// Replication lag on a live cluster (samsa loadgen --namesrv): the lab
// sets nothing there, it reads. The first master (by broker name) whose
// `stats ha` reports slaves is probed over one text connection kept
// open; its slave:<addr>:ack_offset and behind_bytes lines give the
// handed offset and each slave's acknowledgement, from which the sampler
// estimates the lag in time as it does for an embedded master.

// liveStatsTimeout bounds one `stats ha` exchange.
const liveStatsTimeout = 2 * time.Second

// liveReplication finds the cluster's replicated master: its replication
// and a probe, or nil and why not.
func liveReplication(ctx context.Context, nameServers []string) (*loadgen.Replication, *haStatsProbe, string) {
	a, err := client.NewAdmin(client.ClientOptions{NameServers: nameServers})
	if err != nil {
		return nil, nil, err.Error()
	}
	defer func() { _ = a.Close() }() // Admin.Close reports nothing
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, nil, "cluster info: " + err.Error()
	}
	names := make([]string, 0, len(ci.BrokerAddrTable))
	for n := range ci.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	var found *haStatsProbe
	var info *loadgen.Replication
	var replicated int
	var errs []string
	for _, n := range names {
		addr, ok := ci.BrokerAddrTable[n].BrokerAddrs[protocol.MasterID]
		if !ok {
			continue
		}
		p := &haStatsProbe{broker: n, addr: addr}
		stats, err := p.stats(ctx)
		if err != nil {
			errs = append(errs, err.Error())
			p.close()
			continue
		}
		slaves, _ := strconv.Atoi(statValue(stats, "ha_slaves"))
		if slaves == 0 {
			p.close()
			continue
		}
		replicated++
		if found != nil {
			p.close()
			continue
		}
		found = p
		info = &loadgen.Replication{Role: statValue(stats, "ha_role"), Slaves: slaves, Link: "the live cluster's",
			LinkMethod: loadgen.LinkLive, LinkWhy: "a live cluster: the lab sets no delay and measures no link round trip"}
	}
	if found == nil {
		why := "no master reports slaves in its stats ha"
		if len(errs) > 0 {
			why += " (" + strings.Join(errs, "; ") + ")"
		}
		return nil, nil, why
	}
	found.of = fmt.Sprintf("%d of %d replicated masters", 1, replicated)
	return info, found, ""
}

// liveReplicated wraps a live cluster's driver so the run samples its
// replication lag, or says on stderr why it will not.
func (l labSettings) liveReplicated(ctx context.Context, d loadgen.Driver, nameServers []string) loadgen.Driver {
	info, probe, why := liveReplication(ctx, nameServers)
	if info == nil {
		fmt.Fprintf(os.Stderr, "loadgen: live cluster: replication lag not measured: %s\n", why)
		return d
	}
	return &withLiveReplication{Driver: d, info: info, probe: probe}
}

// withLiveReplication makes a live cluster's driver a
// loadgen.ReplicatedDriver.
type withLiveReplication struct {
	loadgen.Driver
	info  *loadgen.Replication
	probe *haStatsProbe
}

func (w *withLiveReplication) Replication() (*loadgen.Replication, loadgen.LagProbe) {
	info := *w.info
	return &info, w.probe
}

func (w *withLiveReplication) Close() error {
	w.probe.close()
	return w.Driver.Close()
}

// haStatsProbe reads one master's `stats ha` over a text connection it
// keeps (and redials after an error).
type haStatsProbe struct {
	broker, addr, of string
	mu               sync.Mutex // guards conn and r (Read, close)
	conn             net.Conn
	r                *bufio.Reader
}

func (p *haStatsProbe) Source() string {
	return fmt.Sprintf("stats ha of %s (%s; %s)", p.broker, p.addr, p.of)
}

func (p *haStatsProbe) stats(ctx context.Context) ([]protocol.Stat, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", p.addr)
		if err != nil {
			return nil, fmt.Errorf("stats ha of %s: %w", p.addr, err)
		}
		p.conn, p.r = c, bufio.NewReader(c)
	}
	_ = p.conn.SetDeadline(time.Now().Add(liveStatsTimeout))
	if _, err := p.conn.Write([]byte("stats ha\r\n")); err != nil {
		p.closeLocked()
		return nil, fmt.Errorf("stats ha of %s: %w", p.addr, err)
	}
	st, err := protocol.ReadStats(p.r)
	if err != nil {
		p.closeLocked()
		return nil, fmt.Errorf("stats ha of %s: %w", p.addr, err)
	}
	return st, nil
}

func (p *haStatsProbe) Read(ctx context.Context) (loadgen.LagReading, error) {
	st, err := p.stats(ctx)
	if err != nil {
		return loadgen.LagReading{}, err
	}
	return parseHAStats(st)
}

func (p *haStatsProbe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked()
}

func (p *haStatsProbe) closeLocked() {
	if p.conn != nil {
		_ = p.conn.Close() // a stats connection: nothing to flush
		p.conn, p.r = nil, nil
	}
}

// parseHAStats reads a master's slave:<addr>:<field> lines: each slave's
// ack_offset, behind_bytes (handed minus ack) and lag_ms; the handed
// offset is the largest ack + behind.
func parseHAStats(st []protocol.Stat) (loadgen.LagReading, error) {
	var r loadgen.LagReading
	slaves, err := protocol.ParseSlaveStats(st)
	if err != nil {
		return r, fmt.Errorf("stats ha: %w", err)
	}
	for _, sl := range slaves {
		r.Handed = max(r.Handed, sl.AckOffset+sl.BehindBytes)
		r.Slaves = append(r.Slaves, loadgen.SlaveLag{Slave: sl.Addr, Ack: sl.AckOffset, MasterTime: time.Duration(sl.LagMs) * time.Millisecond})
	}
	if len(r.Slaves) == 0 {
		return r, errors.New("stats ha: no slave lines")
	}
	return r, nil
}

// statValue is the value of the stat named name, or "".
func statValue(st []protocol.Stat, name string) string {
	for _, s := range st {
		if s.Name == name {
			return s.Value
		}
	}
	return ""
}
