package loadgen

import (
	"fmt"
	"sort"
	"strings"
)

// replicated reports whether any cell of the result ran slaves: such a
// result gets the replication table.
func (r *ExperimentResult) replicated() bool {
	for _, c := range r.Cells {
		if c.Cluster.Replicated() {
			return true
		}
	}
	return false
}

// noSlaveCell is the cell c is held against: the same driver, store
// settings and workload, without slaves. nil when the run has none.
func (r *ExperimentResult) noSlaveCell(c *CellResult) *CellResult {
	for i := range r.Cells {
		o := &r.Cells[i]
		if o.Cluster.Replicated() || o.Skipped != "" || o.Driver != c.Driver ||
			o.Cluster.Flush != c.Cluster.Flush || o.Cluster.Backend != c.Cluster.Backend ||
			o.Cluster.MaxBatchBytes != c.Cluster.MaxBatchBytes {
			continue
		}
		a, b := o.Workload, c.Workload
		a.Name, b.Name = "", ""
		if a == b {
			return o
		}
	}
	return nil
}

// replicationTable renders a replication experiment's cells: the
// durability an acknowledgement had, the role and link, throughput and
// latency with their ratios to the no-slave cell of the same flush and
// workload, and the slaves' lag; then why each link method ran.
func (r *ExperimentResult) replicationTable(b *strings.Builder) {
	fmt.Fprintf(b, "Run %s; medians over repeats; latencies in ms; e2e = intended send → consumer; "+
		"÷ none = over the cell without slaves of the same flush and workload; "+
		"link RTT = median 8-byte ping through a link of the same method and delay; "+
		"repl lag = how long ago the master's log passed each slave's acknowledged offset, sampled every %v during the measured window.\n\n",
		r.Start.Format("2006-01-02 15:04 UTC"), DefaultLagInterval)
	b.WriteString("| cell | flush | durability | replication | link | link RTT | producers | msgs/s (min–max) | ÷ none | send p50 | send p99 | send p99.9 | p99 ÷ none | e2e p99 | repl lag p99 | behind p99 (KiB) | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	why := map[string][]string{} // "method: reason" → cells
	for i := range r.Cells {
		c := &r.Cells[i]
		repl, link, rtt := "none", "–", "–"
		if rp := c.Replication; rp != nil {
			repl = fmt.Sprintf("%s ×%d", rp.Role, rp.Slaves)
			link, rtt = rp.Link, ms(rp.LinkRTTUs)
			if rp.LinkMethod == LinkLive {
				rtt = "not measured"
			}
			if rp.LinkWhy != "" {
				k := rp.LinkMethod + ": " + rp.LinkWhy
				why[k] = append(why[k], c.Label)
			}
		} else if c.Cluster.Replicated() {
			repl = c.Cluster.Replication + " (not run)"
		}
		if c.Skipped != "" {
			fmt.Fprintf(b, "| %s | %s | | %s | | | %d | skipped: %s |||||||||| \n", c.Label, c.Cluster.Flush, repl, c.Workload.Producers, oneLine(c.Skipped))
			continue
		}
		m := c.Median
		ratio, p99ratio := "–", "–"
		if base := r.noSlaveCell(c); base != nil && base != c {
			if base.Median.MsgsPerSec > 0 {
				ratio = fmt.Sprintf("%.2f×", m.MsgsPerSec/base.Median.MsgsPerSec)
			}
			if base.Median.SendP99Us > 0 {
				p99ratio = fmt.Sprintf("%.2f×", m.SendP99Us/base.Median.SendP99Us)
			}
		}
		e2e, lag, behind := "–", "–", "–"
		if !c.Workload.NoConsumers {
			e2e = ms(m.E2EP99Us)
		}
		if rp := c.Replication; rp != nil {
			lag, behind = "not measured", "–"
			if rp.LagNote == "" {
				lag, behind = ms(m.ReplLagP99Us), fmt.Sprintf("%.0f", m.ReplBehindP99/1024)
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d | %.0f (%.0f–%.0f) | %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n",
			c.Label, c.Cluster.Flush, replDurability(c), repl, link, rtt, c.Workload.Producers,
			m.MsgsPerSec, c.Min.MsgsPerSec, c.Max.MsgsPerSec, ratio,
			ms(m.SendP50Us), ms(m.SendP99Us), ms(m.SendP999Us), p99ratio, e2e, lag, behind, m.Errors)
	}
	notes := make([]string, 0, len(why))
	for k := range why {
		notes = append(notes, k)
	}
	sort.Strings(notes)
	if len(notes) > 0 {
		b.WriteString("\nLink methods:\n")
		for _, k := range notes {
			fmt.Fprintf(b, "- %s (%s)\n", k, strings.Join(why[k], ", "))
		}
	}
	var lagNotes []string
	for _, c := range r.Cells {
		if rp := c.Replication; rp != nil && rp.LagNote != "" {
			lagNotes = append(lagNotes, fmt.Sprintf("%s: %s", c.Label, rp.LagNote))
		}
	}
	if len(lagNotes) > 0 {
		fmt.Fprintf(b, "\nLag not measured: %s.\n", strings.Join(lagNotes, "; "))
	}
}

// replDurability is what an acknowledgement survived: the master store's
// level, and for SYNC_MASTER a copy on a slave too (appended there, not
// necessarily flushed: haSlaveAckFlushed is off by default).
func replDurability(c *CellResult) string {
	d := c.Durability
	if d == "" {
		d = "–"
	}
	if rp := c.Replication; rp != nil && rp.Role == "SYNC_MASTER" {
		d += " + slave"
	}
	return d
}
