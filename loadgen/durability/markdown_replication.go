package durability

import (
	"fmt"
	"strings"

	"github.com/samsamq/samsa/loadgen/killloop"
)

// replicationMarkdown renders a replication experiment's PERFORMANCE.md
// section: one row per cell (role × flush, and the controls).
func (r *ExperimentResult) replicationMarkdown() string {
	var b strings.Builder
	if o, ok := r.heading(&b); ok {
		fmt.Fprintf(&b, "Run %s, seed %d (cell *i* uses seed+*i*), %.0f s. Each cell: a master and one slave (`samsa broker` processes, "+
			"%s backend, own store dirs, static haMasterAddress), %d producers (synchronous sends, ids in the body), %d queues, %d B bodies; "+
			"the master SIGKILLed %v–%v after each incarnation's first SEND_OK and its slave's return, %d times; after each kill every queue "+
			"is read from the slave's address alone and compared with every SEND_OK so far; the master is restarted on its data dir "+
			"(new epoch, the slave reconnects). *Lag* is the master's `stats ha` (slave:*addr*:behind_bytes / lag_ms) sampled just "+
			"before each kill (lag_ms errs upwards by up to 100 ms). *Beyond the lag*: a missing message the slave had acknowledged in "+
			"that sample. Recovery = restart → first SEND_OK; slave back = restart → the master lists its slave again.\n\n",
			r.Start.Format("2006-01-02 15:04 UTC"), r.Seed, r.ElapsedSeconds, o.Backend, o.Producers, o.Queues, o.BodySize,
			o.MinUp, o.MaxUp, o.Kills)
	}
	b.WriteString("**Target**: SYNC_MASTER, 0 acknowledged (SEND_OK) messages missing on the slave after any kill " +
		"(SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT answers are *stored, not replicated*: counted apart, not held to it); " +
		"ASYNC_MASTER, losses reported, and each kill's within the lag sampled before it (0 beyond the lag); both, no duplicate, " +
		"and every acknowledged message on the slave once it caught up after the last restart. A control (an ASYNC_MASTER whose slave " +
		"is stopped before each kill) must show losses: the check can still see one.\n\n")
	b.WriteString("| cell | kills | sent / acked (SEND_OK) | stored, not replicated | missing on the slave (kills with any) | most at one kill | beyond the lag | duplicates | max lag before a kill B / ms | missing after catch-up | recovery p50 / max ms | slave back p50 / max ms | target |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Failed != "" || c.Result == nil || c.Result.Replication == nil {
			fmt.Fprintf(&b, "| %s | failed: %s ||||||||||| **missed** |\n", c.Label, oneLine(c.Failed))
			continue
		}
		x, rep := c.Result, c.Result.Replication
		verdict := "met"
		if c.ExpectLoss {
			verdict = "met (control: losses seen, within the lag)"
		}
		if !c.Met() {
			verdict = "**MISSED**"
		}
		missing := fmt.Sprintf("%d (%d)", rep.Missing, rep.KillsWithMissing)
		if rep.Missing > 0 && rep.Role == "SYNC_MASTER" {
			missing = "**" + missing + "**"
		}
		fmt.Fprintf(&b, "| %s | %d | %d / %d | %s | %s | %d | %s | %s | %d / %d | %s | %.0f / %.0f | %.0f / %.0f | %s |\n",
			c.Label, rep.Kills, x.Sent, x.Acked, storedNotAcked(x.Tally), missing, rep.MaxMissing, bold(rep.BeyondLag),
			bold(max(rep.Duplicates, rep.FinalDuplicates)), rep.MaxLagBytes, rep.MaxLagMs, bold(rep.FinalMissing),
			x.RecoveryMs.P50, x.RecoveryMs.Max, rep.SlaveBackMs.P50, rep.SlaveBackMs.Max, verdict)
	}
	return b.String()
}

// storedNotAcked renders the sends stored but not acknowledged, by answer.
func storedNotAcked(t killloop.Tally) string {
	if t.StoredNotAcked == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", t.StoredNotAcked, sortedStatuses(t.NotAckedByStatus))
}
