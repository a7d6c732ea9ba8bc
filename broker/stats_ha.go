package broker

import "time"

// haStats are the replication lines of the text stats: the role, the
// sends a SYNC_MASTER could not replicate and a slave refused, then per
// slave (a master's, from the replicator's Slaves)
//
//	slave:<addr>:ack_offset    CommitLog offset the slave reported holding
//	slave:<addr>:behind_bytes  master's written offset minus that
//	slave:<addr>:in_sync       1 when a SYNC_MASTER waits for it
//	slave:<addr>:last_ack_ms   unix ms of its last report
//
// or, on a slave, its master and the metadata sync's progress.
func (b *Broker) haStats() []statLine {
	s := &b.stats
	lines := []statLine{
		{"ha_role", string(b.cfg.BrokerRole)},
		{"ha_send_slave_not_available", s.slaveNotAvailable.Load()},
		{"ha_send_flush_slave_timeout", s.slaveTimeouts.Load()},
		{"ha_send_refused_as_slave", s.slaveRefused.Load()},
	}
	if b.isSlave() {
		return append(lines, b.slaveSideStats()...)
	}
	slaves := b.Slaves()
	lines = append(lines, statLine{"ha_slaves", len(slaves)})
	for _, sl := range slaves {
		p := "slave:" + sl.Addr + ":"
		lines = append(lines,
			statLine{p + "ack_offset", sl.AckOffset},
			statLine{p + "behind_bytes", sl.Behind},
			statLine{p + "in_sync", boolInt(sl.InSync)},
			statLine{p + "last_ack_ms", unixMs(sl.LastAck)})
	}
	return lines
}

// slaveSideStats are a slave's lines: whom it follows and how the
// metadata sync goes.
func (b *Broker) slaveSideStats() []statLine {
	lines := []statLine{
		{"ha_master_addr", b.MasterAddr()},
		{"ha_master_ha_addr", b.HAMasterAddr()},
	}
	if m := b.metaSync; m != nil {
		lines = append(lines,
			statLine{"slave_sync_rounds", m.rounds.Load()},
			statLine{"slave_sync_failures", m.failures.Load()},
			statLine{"slave_sync_last_ok_ms", m.lastOK.Load()},
			statLine{"slave_local_offsets", len(b.offsets.localChanges())})
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
