package durability

import (
	"fmt"
	"strings"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// Markdown renders an experiment result as its PERFORMANCE.md section:
// one row per cell, the target it is held to, and the store's statement
// of each durability level that ran.
func (r *ExperimentResult) Markdown() string {
	if r.Kind == ReplicationKind {
		return r.replicationMarkdown()
	}
	var b strings.Builder
	if o, ok := r.heading(&b); ok {
		fmt.Fprintf(&b, "Run %s, seed %d (cell *i* uses seed+*i*), %.0f s. Each cell: %d producers (synchronous sends, ids in the body), "+
			"%d queues, %d B bodies, %d MiB segments; SIGKILL %v–%v after each incarnation's first acknowledgement, %d times, then one SIGTERM; "+
			"then every queue read back from offset 0. Recovery = restart → first acknowledged send. "+
			"*sent* counts attempts, with those refused while the broker was down (each producer tries again every %v).\n\n",
			r.Start.Format("2006-01-02 15:04 UTC"), r.Seed, r.ElapsedSeconds, o.Producers, o.Queues, o.BodySize, o.SegmentSize>>20,
			o.MinUp, o.MaxUp, o.Kills, killloop.FailBackoff)
	}
	b.WriteString("**Target**: at durability process-crash or power-loss (every default configuration), 0 acknowledged messages lost, " +
		"0 offsets reused (the consumer read one id there, the end holds another), 0 acknowledged offsets reassigned, " +
		"0 served then lost; at every level, nothing lost to SIGTERM. A control cell (durability memory) must lose some: " +
		"it shows the loop can still see a loss.\n\n")
	b.WriteString("| cell | durability | kills | sent / acked | lost | lost to TERM | kills with loss | offsets reused | acked offsets reassigned | served then lost | duplicates | recovery p50 / p99 / max ms | segments | target |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	seen := map[string]bool{}
	var notes []string
	for _, c := range r.Cells {
		if !seen[c.DurabilityNote] {
			seen[c.DurabilityNote] = true
			notes = append(notes, c.DurabilityNote)
		}
		if c.Failed != "" || c.Result == nil {
			fmt.Fprintf(&b, "| %s | %s | failed: %s ||||||||||| **missed** |\n", c.Label, c.Durability, oneLine(c.Failed))
			continue
		}
		x := c.Result
		level := x.Level()
		if x.BrokerDurability != "" && x.BrokerDurability != x.Durability {
			level += fmt.Sprintf(" (options say %s)", x.Durability)
		}
		verdict := "met"
		if c.ExpectLoss {
			verdict = "met (control: losses seen)"
		}
		if !c.Met() {
			verdict = "**MISSED**"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d / %d | %s | %s | %d | %s | %s | %s | %d | %.0f / %.0f / %.0f | %d | %s |\n",
			c.Label, level, x.Kills, x.Sent, x.Acked, bold(x.Lost), bold(x.LostInTerm), x.KillsWithLoss,
			bold(x.OffsetsReused), bold(x.AckedReassigned), bold(x.SeenLost), x.Duplicates,
			x.RecoveryMs.P50, x.RecoveryMs.P99, x.RecoveryMs.Max, x.SegmentFiles, verdict)
	}
	if len(notes) > 0 {
		b.WriteString("\nDurability as the store states it (`storage.Options.DurabilityNote`):\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

// heading writes the section's heading and returns the first cell's
// options (with defaults) for the run's description, false when there is
// no cell.
func (r *ExperimentResult) heading(b *strings.Builder) (Options, bool) {
	resultfile.Heading(b, r.Experiment, r.Description, r.Command, r.Quick)
	if len(r.Cells) == 0 {
		return Options{}, false
	}
	o := Cell{CellSpec: r.Cells[0].CellSpec, Settings: r.Cells[0].Settings}.Options("", "", 0)
	o.EnsureDefaults()
	return o, true
}

// bold marks a non-zero count of something that should not happen.
func bold(n int64) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**", n)
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}
