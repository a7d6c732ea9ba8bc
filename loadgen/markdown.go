package loadgen

import (
	"fmt"
	"strings"
)

// Markdown renders an experiment result as tables: one row per cell with
// medians (and the min–max spread of throughput), then the comparisons.
func (r *ExperimentResult) Markdown() string {
	var b strings.Builder
	r.Heading(&b)
	if r.replicated() {
		r.replicationTable(&b)
		r.comparisonTable(&b)
		return b.String()
	}
	fmt.Fprintf(&b, "Run %s; medians over repeats; latencies in ms; e2e = intended send → consumer; lag = how late the generator sent after the intended time (open loop; part of send and e2e).\n\n", r.Start.Format("2006-01-02 15:04 UTC"))
	b.WriteString("| cell | driver | flush | durability | rate | msgs/s (min–max) | MB/s | send p50 | send p99 | e2e p50 | e2e p99 | e2e p99.9 | lag p99 | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		rate := "max"
		if c.Workload.Rate > 0 {
			rate = fmt.Sprintf("%.0f", c.Workload.Rate)
		}
		if c.Skipped != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | | %s | skipped: %s ||||||||| \n", c.Label, c.Driver, c.Cluster.Flush, rate, oneLine(c.Skipped))
			continue
		}
		m := c.Median
		e2e := func(v float64) string {
			if c.Workload.NoConsumers {
				return "–"
			}
			return ms(v)
		}
		lag := "–"
		if c.Workload.Rate > 0 {
			lag = ms(m.LagP99Us)
		}
		dur := c.Durability
		if dur == "" {
			dur = "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f (%.0f–%.0f) | %.1f | %s | %s | %s | %s | %s | %s | %.0f |\n",
			c.Label, c.Driver, c.Cluster.Flush, dur, rate, m.MsgsPerSec, c.Min.MsgsPerSec, c.Max.MsgsPerSec, m.MBPerSec,
			ms(m.SendP50Us), ms(m.SendP99Us), e2e(m.E2EP50Us), e2e(m.E2EP99Us), e2e(m.E2EP999Us), lag, m.Errors)
	}
	r.ombTable(&b)
	r.deliveryNotes(&b)
	r.serverTable(&b)
	r.comparisonTable(&b)
	return b.String()
}

// ombTable gives an OMB workload's cells in OpenMessaging Benchmark's
// headline terms: publish and consume rates, publish latency from the
// actual send, publish delay, end-to-end latency, backlog drain.
func (r *ExperimentResult) ombTable(b *strings.Builder) {
	if r.OMBWorkload == "" {
		return
	}
	fmt.Fprintf(b, "\nIn OpenMessaging Benchmark's terms (workload `%s`; medians over repeats; ms; pub = actual send → acknowledgement, OMB's publish latency; delay = OMB's publish delay; e2e from the intended send, so OMB's e2e plus the delay):\n\n", r.OMBWorkload)
	b.WriteString("| cell | pub rate msg/s | cons rate msg/s | pub p50 | pub p99 | pub p99.9 | pub max | delay p99 | e2e p50 | e2e p99 | e2e p99.9 | e2e max | backlog drain msg/s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		if c.Skipped != "" {
			continue
		}
		m := c.Median
		drain := "–"
		if c.Workload.BacklogBytes > 0 {
			drain = fmt.Sprintf("%.0f", m.DrainMsgsPerSec)
		}
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			c.Label, m.MsgsPerSec, m.ConsumedPerSec, ms(m.PubP50Us), ms(m.PubP99Us), ms(m.PubP999Us), ms(m.PubMaxUs),
			ms(m.LagP99Us), ms(m.E2EP50Us), ms(m.E2EP99Us), ms(m.E2EP999Us), ms(m.E2EMaxUs), drain)
	}
}

// ratioText is a ratio as "1.23×"; one below 0.01 keeps two significant
// digits ("0.00055×"), not a "0.00×" that reads as zero.
func ratioText(v float64) string {
	if v > 0 && v < 0.01 {
		return fmt.Sprintf("%.2g×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

// comparisonTable renders the comparisons, ratios and additive targets.
func (r *ExperimentResult) comparisonTable(b *strings.Builder) {
	if len(r.Comparisons) > 0 {
		b.WriteString("\n| comparison | metric | ratio | target | met |\n|---|---|---|---|---|\n")
		for _, c := range r.Comparisons {
			var val string
			target, met := "–", "–"
			switch {
			case c.Note != "":
				val = c.Note
			case c.Kind == "additive":
				val = fmt.Sprintf("%+.2f ms", c.Value/1000)
			default:
				val = ratioText(c.Value)
			}
			if c.Kind == "additive" {
				target = fmt.Sprintf("≤ %+.2f ms (%g × RTT %.3f ms + %g ms)", c.Bound/1000, c.PlusRTT, c.RTTUs/1000, c.PlusMs)
			} else if c.Target != 0 {
				op := "≥"
				if _, higher, _ := metric(Summary{}, c.Metric); !higher {
					op = "≤"
				}
				target = fmt.Sprintf("%s %.2f×", op, c.Target)
			}
			if c.Met != nil {
				met = map[bool]string{true: "yes", false: "**no**"}[*c.Met]
			}
			if c.NotComparable != "" {
				met = "not comparable"
			}
			op := "÷"
			if c.Kind == "additive" {
				op = "−"
			}
			fmt.Fprintf(b, "| %s (%s %s %s) | %s | %s | %s | %s |\n", c.Name, c.Num, op, c.Den, c.Metric, val, target, met)
		}
		for _, c := range r.Comparisons {
			if c.NotComparable != "" {
				fmt.Fprintf(b, "\nNot comparable, %s: %s\n", c.Name, strings.ReplaceAll(c.NotComparable, "\n", " "))
			}
		}
	}
}

func ms(us float64) string { return fmt.Sprintf("%.2f", us/1000) }

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// deliveryNotes names the cells whose consumers saw redeliveries or missed
// acknowledged messages (medians over the runs; max in brackets).
func (r *ExperimentResult) deliveryNotes(b *strings.Builder) {
	for _, c := range r.Cells {
		if c.Skipped != "" || (c.Max.Duplicates == 0 && c.Max.NeverReceived == 0) {
			continue
		}
		fmt.Fprintf(b, "\nDeliveries, %s: %.0f duplicates (max %.0f), %.0f acknowledged never received (max %.0f).\n",
			c.Label, c.Median.Duplicates, c.Max.Duplicates, c.Median.NeverReceived, c.Max.NeverReceived)
	}
}

// serverTable lists the server's open files and RSS per cell, when any
// cell read them (queue-count scaling).
func (r *ExperimentResult) serverTable(b *strings.Builder) {
	var rows []string
	for _, c := range r.Cells {
		if c.Skipped != "" || len(c.Runs) == 0 || c.Runs[0].Server == nil {
			continue
		}
		sv := c.Runs[0].Server
		what := fmt.Sprintf("process group %d", sv.PGID)
		if sv.Self {
			what = "this process"
		}
		if sv.Note != "" {
			what += ": " + sv.Note
		}
		if sv.Error != "" {
			what += " (not read: " + oneLine(sv.Error) + ")"
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %.0f | %s |", c.Label, c.Workload.Topics*c.Workload.QueuesPerTopic, c.Median.OpenFiles, c.Median.RSSMB, oneLine(what)))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nServer processes at the end of the measured window (medians over repeats):\n\n| cell | queues | open files | RSS MB | read from |\n|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n")
}
