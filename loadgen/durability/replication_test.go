package durability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/killloop"
	"github.com/samsamq/samsa/protocol"
)

// TestLagOfReadsTheSlaveLines: the master's `stats ha` lines give the
// slave furthest behind; an address with colons is split at its last;
// a malformed slave line is an error.
func TestLagOfReadsTheSlaveLines(t *testing.T) {
	st := func(kv ...string) []protocol.Stat {
		var out []protocol.Stat
		for i := 0; i < len(kv); i += 2 {
			out = append(out, protocol.Stat{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	got, err := lagOf(st("ha_role", "SYNC_MASTER", "ha_slaves", "0"))
	require.NoError(t, err)
	require.Equal(t, LagSample{}, got)
	got, err = lagOf(st("ha_role", "ASYNC_MASTER", "ha_slaves", "2",
		"slave:127.0.0.1:4001:ack_offset", "5000", "slave:127.0.0.1:4001:behind_bytes", "100",
		"slave:127.0.0.1:4001:lag_ms", "3", "slave:127.0.0.1:4001:in_sync", "1", "slave:127.0.0.1:4001:since_ms", "17",
		"slave:127.0.0.1:4002:ack_offset", "4000", "slave:127.0.0.1:4002:behind_bytes", "1100",
		"slave:127.0.0.1:4002:lag_ms", "40", "slave:127.0.0.1:4002:in_sync", "0"))
	require.NoError(t, err)
	require.Equal(t, LagSample{Slaves: 2, AckOffset: 4000, BehindBytes: 1100, LagMs: 40}, got)
	_, err = lagOf(st("slave:127.0.0.1:4001:ack_offset", "-"))
	require.ErrorContains(t, err, "slave:127.0.0.1:4001:ack_offset")
}

// TestCheckReplica: a missing message acknowledged before the lag sample
// must lie at or beyond the slave's acknowledged offset in it; one below
// is a loss the lag does not account for; one acknowledged after the
// sample is missing but not held to the lag.
func TestCheckReplica(t *testing.T) {
	l := killloop.NewLedger()
	now := time.Now()
	l.AckedAt("a", killloop.Pos{Queue: 0, Offset: 0}, 0, now)
	l.AckedAt("b", killloop.Pos{Queue: 0, Offset: 1}, 100, now)
	sample := LagSample{AckSeq: l.AckSeq(), AckOffset: 100, BehindBytes: 100}
	l.AckedAt("c", killloop.Pos{Queue: 1, Offset: 0}, 200, now)
	l.StoredOnly("d", killloop.Pos{Queue: 1, Offset: 1}, 300, "SLAVE_NOT_AVAILABLE")

	k := checkReplica(l, map[killloop.Pos]string{{Queue: 0, Offset: 0}: "a"}, sample, 100)
	require.EqualValues(t, 3, k.Acked)
	require.EqualValues(t, 2, k.Missing)
	require.EqualValues(t, 1, k.MissingBeforeSample)
	require.EqualValues(t, 100, k.MissingBytes)
	require.Zero(t, k.BeyondLag)
	require.EqualValues(t, 1, k.StoredNotAckedMissing)
	require.True(t, k.Met("ASYNC_MASTER"))
	require.False(t, k.Met("SYNC_MASTER"))

	// the slave said it held a, yet it is gone (and b sits where a was)
	k = checkReplica(l, map[killloop.Pos]string{{Queue: 0, Offset: 0}: "b", {Queue: 1, Offset: 0}: "c", {Queue: 1, Offset: 1}: "d"}, sample, 100)
	require.EqualValues(t, 1, k.Missing)
	require.EqualValues(t, 1, k.BeyondLag)
	require.EqualValues(t, 1, k.AckedReassigned)
	require.Equal(t, []string{"a acked at q0@0 (commit log 0) by incarnation 1"}, k.MissingSample)
	require.False(t, k.Met("ASYNC_MASTER"))

	// everything there, one id twice
	k = checkReplica(l, map[killloop.Pos]string{{Queue: 0, Offset: 0}: "a", {Queue: 0, Offset: 1}: "b", {Queue: 1, Offset: 0}: "c", {Queue: 1, Offset: 1}: "d", {Queue: 1, Offset: 2}: "c"}, sample, 100)
	require.Zero(t, k.Missing)
	require.EqualValues(t, 1, k.Duplicates)
	require.False(t, k.Met("SYNC_MASTER"))
}

// TestShippedReplicationExperimentLoads keeps experiments/
// replication-durability.json loadable: 4 roles × flushes and 2 paused
// slave cells, 50 kills; --quick: the async-flush cells, 5 kills.
func TestShippedReplicationExperimentLoads(t *testing.T) {
	e, err := LoadExperiment(filepath.Join("..", "..", "experiments", "replication-durability.json"))
	require.NoError(t, err)
	require.Equal(t, ReplicationKind, e.Kind)
	full, err := e.Expand(false)
	require.NoError(t, err)
	quick, err := e.Expand(true)
	require.NoError(t, err)
	require.Len(t, full, 6)
	require.Len(t, quick, 4)
	require.Equal(t, "SYNC_MASTER pwrite/async", full[0].Label)
	require.Equal(t, 50, full[0].Settings.Kills)
	require.Equal(t, 5, quick[0].Settings.Kills)
	for _, c := range quick {
		require.Equal(t, "async", c.Flush, c.Label)
	}
	ctl := full[5]
	require.True(t, ctl.ExpectLoss)
	o := ctl.Options("samsa", "", 7)
	require.Equal(t, "ASYNC_MASTER", o.Role)
	require.Equal(t, 500*time.Millisecond, o.PauseSlave)
	require.Equal(t, "SYNC_MASTER pwrite/async, slave paused 500ms", full[4].Label)
}

// TestReplicationExperimentNeedsRoles: a replication experiment's cells
// name a role and a durability-kill experiment's none; a pause needs a
// role.
func TestReplicationExperimentNeedsRoles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"no role":      `{"name":"x","kind":"replication-durability","cells":[{"backend":"pwrite","flush":"async"}]}`,
		"role in kill": `{"name":"x","kind":"durability-kill","cells":[{"role":"SYNC_MASTER","backend":"pwrite","flush":"async"}]}`,
		"bad role":     `{"name":"x","kind":"replication-durability","cells":[{"role":"SLAVE","backend":"pwrite","flush":"async"}]}`,
		"quick empty":  `{"name":"x","kind":"replication-durability","cells":[{"role":"SYNC_MASTER","backend":"pwrite","flush":"async","full_only":true}]}`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		_, err := LoadExperiment(p)
		require.Error(t, err, name)
	}
	o := Options{Binary: "samsa", PauseSlave: time.Second}
	o.EnsureDefaults()
	require.ErrorContains(t, o.Validate(), "PauseSlave")
}

// TestReplicationMarkdown renders a met SYNC_MASTER cell, a SYNC_MASTER
// cell that lost an acknowledged message, the control and a failed cell.
func TestReplicationMarkdown(t *testing.T) {
	cell := func(label, role string, ctl bool, rep ReplicationResult, tally killloop.Tally) CellResult {
		rep.Role = role
		return CellResult{CellSpec: CellSpec{Label: label, Role: role, Backend: "pwrite", Flush: "async", ExpectLoss: ctl},
			Result: &Result{Tally: tally, RecoveryMs: Stats{P50: 150, Max: 300}, Replication: &rep}}
	}
	ok := []KillCheck{{Kill: 1, Acked: 10}}
	r := &ExperimentResult{Header: resultfile.Header{Experiment: "replication-durability", Kind: ReplicationKind,
		Start: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)}, Seed: 9, Cells: []CellResult{
		cell("SYNC_MASTER pwrite/async", "SYNC_MASTER", false, ReplicationResult{Checks: ok, Kills: 1, MaxLagBytes: 7152, MaxLagMs: 40},
			killloop.Tally{Sent: 120, Acked: 100, StoredNotAcked: 12, NotAckedByStatus: map[string]int64{"SLAVE_NOT_AVAILABLE": 12}}),
		cell("SYNC_MASTER lost", "SYNC_MASTER", false, ReplicationResult{Checks: []KillCheck{{Kill: 1, Missing: 2}}, Kills: 1,
			Missing: 2, MaxMissing: 2, KillsWithMissing: 1}, killloop.Tally{Sent: 10, Acked: 10}),
		cell("control", "ASYNC_MASTER", true, ReplicationResult{Checks: []KillCheck{{Kill: 1, Missing: 5}}, Kills: 1,
			Missing: 5, MaxMissing: 5, KillsWithMissing: 1, MaxLagBytes: 9000, MaxLagMs: 500}, killloop.Tally{Sent: 10, Acked: 10}),
		{CellSpec: CellSpec{Label: "ASYNC_MASTER pwrite/sync", Role: "ASYNC_MASTER"}, Failed: "the slave did not settle\nmore"},
	}}
	md := r.Markdown()
	require.Contains(t, md, "| SYNC_MASTER pwrite/async | 1 | 120 / 100 | 12 (SLAVE_NOT_AVAILABLE 12) | 0 (0) | 0 | 0 | 0 | 7152 / 40 | 0 | 150 / 300 | 0 / 0 | met |")
	require.Contains(t, md, "| SYNC_MASTER lost | 1 | 10 / 10 | 0 | **2 (1)** | 2 | 0 | 0 | 0 / 0 | 0 | 150 / 300 | 0 / 0 | **MISSED** |")
	require.Contains(t, md, "| control | 1 | 10 / 10 | 0 | 5 (1) | 5 | 0 | 0 | 9000 / 500 | 0 | 150 / 300 | 0 / 0 | met (control: losses seen, within the lag) |")
	require.Contains(t, md, "| ASYNC_MASTER pwrite/sync | failed: the slave did not settle |")
	require.Equal(t, []string{"SYNC_MASTER lost", "ASYNC_MASTER pwrite/sync"}, r.Missed())
}
