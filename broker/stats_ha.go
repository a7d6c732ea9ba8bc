package broker

import (
	"strconv"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// haStats are the replication lines of the text stats: the role, the
// sends a SYNC_MASTER could not replicate and a slave refused, then per
// slave (a master's, from the replicator's Slaves) its
// slave:<addr>:<field> lines, protocol.SlaveStat's (ack_offset,
// behind_bytes, lag_ms, in_sync, since_ms); or, on a slave, its master
// and the metadata sync's progress.
func (r *Replication) haStats() []statLine {
	lines := []statLine{
		{"ha_role", string(r.cfg.BrokerRole)},
		{"ha_send_slave_not_available", r.slaveNotAvailable.Load()},
		{"ha_send_flush_slave_timeout", r.slaveTimeouts.Load()},
		{"ha_send_refused_as_slave", r.slaveRefused.Load()},
	}
	if r.ctl != nil {
		lines = append(lines, r.ctl.stats()...) // controller_mode.go
	}
	if r.isSlave() {
		return append(lines, r.slaveSideStats()...)
	}
	slaves := r.Slaves()
	lines = append(lines, statLine{"ha_slaves", len(slaves)})
	for _, sl := range slaves {
		st := protocol.SlaveStat{Addr: sl.Addr, AckOffset: sl.AckOffset, BehindBytes: sl.Behind,
			LagMs: sl.LagTime.Milliseconds(), InSync: sl.InSync, SinceMs: unixMs(sl.Since)}
		for _, l := range st.Format() {
			lines = append(lines, statLine{l.Name, l.Value})
		}
	}
	return lines
}

// slaveSideStats are a slave's lines: whom it follows and how the
// metadata sync goes.
func (r *Replication) slaveSideStats() []statLine {
	ls := r.LinkStatus()
	lastErr := ""
	if ls.LastError != nil {
		lastErr = ls.LastError.Error()
	}
	lines := []statLine{
		{"ha_master_addr", r.MasterAddr()},
		{"ha_master_ha_addr", r.HAMasterAddr()},
		{"ha_link_connected", boolInt(ls.Connected)},
		{"ha_link_offset", ls.Offset},
		{"ha_link_behind_bytes", max(ls.MasterHanded-ls.Offset, 0)},
		{"ha_link_confirm_offset", ls.ConfirmOffset},
		{"ha_link_reconnects", ls.Reconnects},
		{"ha_link_cut_refused", boolInt(ls.CutRefused)},
		{"ha_link_last_error", strconv.Quote(lastErr)},
	}
	if m := r.meta; m != nil {
		lines = append(lines,
			statLine{"slave_sync_rounds", m.rounds.Load()},
			statLine{"slave_sync_failures", m.failures.Load()},
			statLine{"slave_sync_last_ok_ms", m.lastOK.Load()},
			statLine{"slave_local_offsets", len(m.offsets.Local())})
	}
	return lines
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
