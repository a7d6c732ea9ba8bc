package durability

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/loadgen/killloop"
	"github.com/samsamq/samsa/protocol"
)

// LagSample is the master's view of its slave at one moment: the slave
// lines of its text `stats ha` (slave:<addr>:ack_offset, behind_bytes,
// lag_ms, in_sync). With several slaves listed, the furthest behind.
type LagSample struct {
	// At is when the sample was asked for.
	At time.Time `json:"at"`
	// AckSeq is Ledger.AckSeq just before the sample was asked for: every
	// acknowledgement up to it was answered before the master computed
	// the sample, so its record lies below the master's handed offset.
	AckSeq int64 `json:"ack_seq"`
	// Slaves counts the slaves listed (0: none connected; the fields
	// below are then 0).
	Slaves int `json:"slaves"`
	// AckOffset is the CommitLog offset the slave last reported holding.
	AckOffset int64 `json:"ack_offset"`
	// BehindBytes is the master's handed offset minus AckOffset.
	BehindBytes int64 `json:"behind_bytes"`
	// LagMs is how long ago the master's log passed AckOffset.
	LagMs int64 `json:"lag_ms"`
	// InSync says a SYNC_MASTER waits for the slave.
	InSync bool `json:"in_sync"`
}

// sampleLag asks the master at addr for its `stats ha` lines.
func sampleLag(ctx context.Context, a *client.Admin, addr string, l *killloop.Ledger) (LagSample, error) {
	at, seq := time.Now(), l.AckSeq()
	stats, err := a.BrokerStats(ctx, addr, "ha")
	s, perr := lagOf(stats)
	s.At, s.AckSeq = at, seq
	if err == nil {
		err = perr
	}
	return s, err
}

// lagOf reads a master's slave lines: the slave furthest behind.
func lagOf(stats []protocol.Stat) (LagSample, error) {
	slaves, err := protocol.ParseSlaveStats(stats)
	if err != nil {
		return LagSample{}, fmt.Errorf("stats ha: %w", err)
	}
	s := LagSample{Slaves: len(slaves)}
	for i, sl := range slaves {
		if i == 0 || sl.AckOffset < s.AckOffset {
			s.AckOffset, s.BehindBytes, s.LagMs, s.InSync = sl.AckOffset, sl.BehindBytes, sl.LagMs, sl.InSync
		}
	}
	return s, nil
}

// lagPoller samples the master's lag every interval while the run goes,
// and keeps the largest lag seen. It owns one goroutine, woken by its
// ticker, until stop.
type lagPoller struct {
	admin  *client.Admin
	addr   string
	ledger *killloop.Ledger
	p      *killloop.Poller
	mu     struct {
		sync.Mutex
		last             LagSample // the last sample that named a slave
		maxBytes, maxLag int64
		samples          int64
	}
}

// lagPollInterval is how often the poller asks.
const lagPollInterval = 100 * time.Millisecond

func startLagPoller(a *client.Admin, addr string, l *killloop.Ledger) *lagPoller {
	p := &lagPoller{admin: a, addr: addr, ledger: l}
	p.p = killloop.StartPoller(lagPollInterval, func(time.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s, err := sampleLag(ctx, p.admin, p.addr, p.ledger)
		cancel()
		if err == nil { // the master is down between a kill and its restart
			p.note(s)
		}
	})
	return p
}

// note records a sample taken by the poller or by the loop itself.
func (p *lagPoller) note(s LagSample) {
	if s.Slaves == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.last = s
	p.mu.maxBytes = max(p.mu.maxBytes, s.BehindBytes)
	p.mu.maxLag = max(p.mu.maxLag, s.LagMs)
	p.mu.samples++
}

// last is the last sample that named a slave.
func (p *lagPoller) last() LagSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.last
}

// maxima are the largest lag in bytes and in ms seen, and the samples.
func (p *lagPoller) maxima() (bytes, ms, samples int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.maxBytes, p.mu.maxLag, p.mu.samples
}

func (p *lagPoller) stop() { p.p.Stop() }

// KillCheck is what the slave held after one SIGKILL of the master.
type KillCheck struct {
	// Kill numbers the kills from 1; Epoch is the master incarnation
	// killed; UpMs how long after its first acknowledgement (and its
	// slave's return) it was killed.
	Kill  int     `json:"kill"`
	Epoch int     `json:"epoch"`
	UpMs  float64 `json:"up_ms"`
	// Lag is the master's lag sample taken just before the SIGKILL.
	Lag LagSample `json:"lag"`
	// SlaveOffset is the slave's CommitLog end when it was read.
	SlaveOffset int64 `json:"slave_offset"`
	// Acked counts the acknowledgements (SEND_OK) before the kill, every
	// incarnation's; Stored the messages read from the slave.
	Acked  int64 `json:"acked"`
	Stored int64 `json:"stored"`
	// Missing counts acknowledged messages the slave does not hold;
	// MissingSample names a few, with their places.
	Missing       int64    `json:"missing"`
	MissingSample []string `json:"missing_sample,omitempty"`
	// MissingBeforeSample counts those acknowledged before the lag
	// sample was asked for, and MissingBytes their records' bytes: what
	// the lag must account for.
	MissingBeforeSample int64 `json:"missing_before_sample"`
	MissingBytes        int64 `json:"missing_bytes"`
	// BeyondLag counts missing messages acknowledged before the sample
	// whose record lies below the slave's acknowledged offset in it (or
	// whose offset is unknown): lost although the slave said it held
	// them. Must be 0 in every mode.
	BeyondLag int64 `json:"beyond_lag"`
	// Duplicates counts ids the slave holds at two places;
	// AckedReassigned acknowledged places that hold another id there.
	Duplicates      int64 `json:"duplicates"`
	AckedReassigned int64 `json:"acked_reassigned"`
	// StoredNotAckedMissing counts sends answered SLAVE_NOT_AVAILABLE or
	// FLUSH_SLAVE_TIMEOUT (stored on the master, not known replicated)
	// that the slave does not hold: allowed.
	StoredNotAckedMissing int64 `json:"stored_not_acked_missing"`
	// ReadMs is how long the check took (the slave's catch-up with what it
	// had received, then the read).
	ReadMs float64 `json:"read_ms"`
	// ReadShort notes queues the read could not read to the end.
	ReadShort []string `json:"read_short,omitempty"`
	// RecoveryMs is the restart's time to the first SEND_OK; SlaveBackMs
	// to the slave's return to the master's HA lines.
	RecoveryMs  float64 `json:"recovery_ms"`
	SlaveBackMs float64 `json:"slave_back_ms"`
}

// Met says the check found what the role promises: under SYNC_MASTER no
// acknowledged message missing; under either role none missing that the
// lag before the kill does not account for, no duplicate, no
// acknowledged place holding another id, and every queue read.
func (k *KillCheck) Met(role string) bool {
	if k.BeyondLag > 0 || k.Duplicates > 0 || k.AckedReassigned > 0 || len(k.ReadShort) > 0 {
		return false
	}
	return role != "SYNC_MASTER" || k.Missing == 0
}

// checkReplica compares the acknowledgements with a replica's copy
// (found: the id at each place) and with the lag sample taken before the
// copy stopped growing. recordBytes is one message's stored size.
func checkReplica(l *killloop.Ledger, found map[killloop.Pos]string, s LagSample, recordBytes int64) KillCheck {
	c := l.CheckReplica(found, s.AckSeq, s.AckOffset)
	return KillCheck{Acked: c.Acked, Stored: c.Stored, Missing: c.Lost, MissingSample: c.LostSample,
		Duplicates: c.Duplicates, AckedReassigned: c.AckedReassigned,
		MissingBeforeSample: c.MissingBeforeSample, MissingBytes: c.MissingBeforeSample * recordBytes,
		BeyondLag: c.BeyondLag, StoredNotAckedMissing: c.StoredNotAckedMissing}
}

// storeState is what a broker's text stats say of its store and link.
type storeState struct {
	written, dispatched int64
	linkConnected       bool
}

func brokerStoreState(ctx context.Context, a *client.Admin, addr string) (storeState, error) {
	stats, err := a.BrokerStats(ctx, addr)
	if err != nil {
		return storeState{}, err
	}
	var s storeState
	for _, st := range stats {
		v, _ := strconv.ParseInt(st.Value, 10, 64)
		switch st.Name {
		case "store_written_offset":
			s.written = v
		case "store_dispatched_offset":
			s.dispatched = v
		case "ha_link_connected":
			s.linkConnected = v == 1
		}
	}
	return s, nil
}

// waitSlaveSettled waits until the slave's dispatcher has indexed its
// whole log, so a read sees all it holds, and, with linkDown, until it has
// dropped its link to the dead master (so it has appended all it
// received). It returns the slave's log end.
func waitSlaveSettled(ctx context.Context, a *client.Admin, addr string, linkDown bool, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	var last storeState
	var lastErr error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := brokerStoreState(c, a, addr)
		cancel()
		if err == nil && !(linkDown && s.linkConnected) && s.dispatched >= s.written {
			return s.written, nil
		}
		last, lastErr = s, err
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("the slave did not settle within %v (link connected %t, dispatched %d of %d; %v)",
		timeout, last.linkConnected, last.dispatched, last.written, lastErr)
}

// sortedStatuses renders counts by answer stably.
func sortedStatuses(m map[string]int64) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
