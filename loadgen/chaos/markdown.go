package chaos

import (
	"fmt"
	"strings"
)

// Markdown is res as PERFORMANCE.md tables: the verdict, then RTO and
// the longest send gap per fault kind.
func (res *Result) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Seed %d; %s.\n\n", res.Seed, res.Config)
	b.WriteString("| cycles | sent | acked | consumed | lost | duplicated | out of order | acked offsets shared | two masters in one epoch | met |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %s | %d | %d | %s | %s | %s |\n\n",
		len(res.Cycles), res.Sent, res.Acked, res.Consumed, bold(res.Lost), res.Duplicates, res.Order.OutOfOrder,
		bold(res.AckedReassigned), bold(int64(len(res.TwoMasters))), yes(res.Met()))
	if len(res.ReadBackShort) > 0 {
		fmt.Fprintf(&b, "Read-back short (lost counts what it could not read): %s.\n\n", strings.Join(res.ReadBackShort, "; "))
	}
	b.WriteString("| fault | n | RTO p50 | p90 | p99 | max | longest send gap |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range res.faultsOf() {
		p := res.RTO[f]
		fmt.Fprintf(&b, "| %s | %d | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %.0f ms |\n", f, p.N, p.P50, p.P90, p.P99, p.Max, res.GapMs[f])
	}
	b.WriteString("\nRTO: from the fault to the first acknowledged send by another broker (for a fault that leaves the master, by any broker); longest send gap: from the fault until the cluster is whole again.\n")
	return b.String()
}

func bold(n int64) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**", n)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
