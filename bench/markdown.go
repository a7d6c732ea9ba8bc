package bench

import (
	"fmt"
	"strings"
	"time"
)

// Chart is a rendered chart a report links to.
type Chart struct {
	Title string
	// Link is the path the Markdown uses (relative to the report).
	Link string
}

// Markdown renders one result as a report section body: what ran and
// where, the raw-disk references, one row per cell (medians over repeats,
// ratios to the disk of the same run), the targets and the charts.
// reportCmd, if set, is the command that rendered it.
func Markdown(r *ExperimentResult, charts []Chart, reportCmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", r.Experiment)
	if r.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", r.Description)
	}
	quick := ""
	if r.Quick {
		quick = " (quick)"
	}
	fmt.Fprintf(&b, "- Command: `%s`%s", r.Command, quick)
	if reportCmd != "" {
		fmt.Fprintf(&b, "; rendered by `%s`", reportCmd)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- Date: %s; %d repeats of %s (warm-up %s) per cell, in rounds\n",
		r.Start.UTC().Format("2006-01-02 15:04 UTC"), r.Repeats, time.Duration(r.Duration), time.Duration(r.Warmup))
	fmt.Fprintf(&b, "- Machine: %s\n\n", r.MachineLine())

	if len(r.DiskRefs) > 0 || r.Probe != nil {
		b.WriteString("Raw disk, same run (plain pwrite into a preallocated file):\n\n")
		b.WriteString("| reference | writes/s | MB/s (min–max) | p50 | p99 |\n|---|---:|---:|---:|---:|\n")
		for _, d := range r.DiskRefs {
			if d.Error != "" {
				fmt.Fprintf(&b, "| %s | failed: %s | | | |\n", d.Key, oneLine(d.Error))
				continue
			}
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s |\n", d.Key, d.MsgsPerSec.Median, withRange(d.MBPerSec, "%.1f"),
				fmtUs(medianOfRuns(d.Runs, func(x *DiskResult) float64 { return float64(x.LatencyUs.P50) })), fmtUs(d.P99Us.Median))
		}
		if p := r.Probe; p != nil {
			if p.Error != "" {
				fmt.Fprintf(&b, "| fsync probe | failed: %s | | | |\n", oneLine(p.Error))
			} else {
				fmt.Fprintf(&b, "| single fdatasync, block=%d | | | %s | %s (%s–%s) |\n", p.Block,
					fmtUs(p.P50Us.Median), fmtUs(p.P99Us.Median), fmtUs(p.P99Us.Min), fmtUs(p.P99Us.Max))
			}
		}
		b.WriteString("\n")
		for _, d := range r.DiskRefs {
			if d.Ceiling != nil {
				fmt.Fprintf(&b, "Group-commit ceiling: %d records per fdatasync (%s) run at %.0f writes/s against %s's, so %d writers can make at most **%.1f×** (%.1f–%.1f) the msgs/s of one on this disk, before any engine cost.\n\n",
					d.Group, d.Key, d.MsgsPerSec.Median, d.Base, d.Group, d.Ceiling.Median, d.Ceiling.Min, d.Ceiling.Max)
			}
		}
	}

	b.WriteString("| cell | durability | msgs/s (min–max) | MB/s | ×disk MB/s | p50 | p99 | p99.9 | max | p99 ÷ fsync p99 | appends/fsync | fsyncs/s | syscalls/1k appends | device writes/s | avg device write | device ÷ log bytes |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	devNote := ""
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Status != StatusOK {
			fmt.Fprintf(&b, "| %s | | %s: %s | | | | | | | | | | | | | |\n", c.Label, c.Status, oneLine(c.Reason))
			continue
		}
		s := c.Summary
		if devNote == "" && s.DevWritesPerSec == nil {
			devNote = s.DeviceNote
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %s |\n",
			c.Label, orDash(c.Durability), withRange(s.MsgsPerSec, "%.0f"), s.MBPerSec.Median, fmtRatioSpread(c.Ratios.MB),
			fmtUs(s.P50Us.Median), fmtUs(s.P99Us.Median), fmtUs(s.P999Us.Median), fmtUs(s.MaxUs.Median),
			fmtRatioSpread(c.Ratios.P99VsFsync), fmtBatch(s.AvgBatch.Median), s.FsyncsPerSec.Median, fmtSyscalls(s.SyscallsPer1000.Median),
			fmtDev(s.DevWritesPerSec, s.DeviceNote, func(v float64) string { return fmt.Sprintf("%.0f", v) }),
			fmtDev(s.DevAvgWriteBytes, s.DeviceNote, fmtBytes),
			fmtDev(s.DevBytesPerLog, s.DeviceNote, func(v float64) string { return fmt.Sprintf("%.2f", v) }))
	}
	b.WriteString("\n")
	if devNote != "" {
		fmt.Fprintf(&b, "Device figures: %s\n\n", oneLine(devNote))
	}

	if ts := EvaluateTargets(r); len(ts) > 0 {
		b.WriteString("Targets (medians):\n\n| target | cell | value | bound | met |\n|---|---|---:|---|---|\n")
		for _, t := range ts {
			cell := t.Cell
			if t.Over != "" {
				cell += " ÷ " + t.Over
			}
			val, met := "–", "–"
			if t.Met != nil {
				val = fmt.Sprintf("%.3g", t.Value)
				met = map[bool]string{true: "yes", false: "**no**"}[*t.Met]
			}
			if t.Note != "" {
				met = t.Note
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.Name, cell, val, t.Bound, met)
		}
		b.WriteString("\n")
	}
	for _, ch := range charts {
		fmt.Fprintf(&b, "![%s](%s)\n\n", ch.Title, ch.Link)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func medianOfRuns(runs []*DiskResult, f func(*DiskResult) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return SpreadOf(v).Median
}

// withRange is "median (min–max)".
func withRange(s Spread, format string) string {
	if s.N <= 1 {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}

func fmtRatioSpread(s *Spread) string {
	if s == nil {
		return "–"
	}
	if s.N <= 1 {
		return fmt.Sprintf("%.2f×", s.Median)
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

func fmtBatch(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", v)
}

// fmtUs writes microseconds as µs, ms or s with three significant digits.
func fmtUs(us float64) string {
	switch {
	case us == 0:
		return "–"
	case us < 1000:
		return fmt.Sprintf("%.0f µs", us)
	case us < 1e6:
		return fmt.Sprintf("%.3g ms", us/1000)
	}
	return fmt.Sprintf("%.3g s", us/1e6)
}

// fmtSyscalls keeps two significant digits below 10 (a staging ring's
// 0.086 per 1,000 appends is not 0).
func fmtSyscalls(v float64) string {
	if v > 0 && v < 10 {
		return fmt.Sprintf("%.2g", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// fmtDev is a device figure's median: "n/a" where the device could not be
// read (note set), "–" in results from before device figures.
func fmtDev(s *Spread, note string, f func(float64) string) string {
	switch {
	case s != nil:
		return f(s.Median)
	case note != "":
		return "n/a"
	}
	return "–"
}

// fmtBytes writes a byte count as B, KiB or MiB.
func fmtBytes(v float64) string {
	switch {
	case v < 1024:
		return fmt.Sprintf("%.0f B", v)
	case v < 1<<20:
		return fmt.Sprintf("%.0f KiB", v/1024)
	}
	return fmt.Sprintf("%.1f MiB", v/(1<<20))
}

// orDash is s, or "–" for an empty s (results from before the field).
func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
