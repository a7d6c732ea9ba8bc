package backlog

import (
	"fmt"
	"strings"
)

// WriteResult writes res as results/<experiment>/<host>-<UTC time>.json
// under dir and returns the path.
func WriteResult(dir string, res *Result) (string, error) {
	return res.Header.WriteResult(dir, res)
}

// Markdown renders the result: one row per repeat, then the targets.
func (r *Result) Markdown() string {
	var b strings.Builder
	r.Heading(&b)
	if len(r.Cells) > 0 {
		r.cellsMarkdown(&b)
		return b.String()
	}
	s := r.Settings
	fmt.Fprintf(&b, "Run %s; MB = 10⁶ B; %s flush; backlog of %d MiB of %d B messages over %d queues, drained by %d pull consumers%s; steady producers %g msg/s on another topic (open loop: send latency from the intended send time); page cache dropped with %s; raw read = `bench disk --read` (%s) on the same disk right after.\n\n",
		r.Start.Format("2006-01-02 15:04 UTC"), s.Flush, s.BacklogBytes>>20, s.MessageSize, s.Queues, s.Consumers, paceNote(s), s.SteadyRate,
		dropMethod(r.Median.Drop.Method), r.Median.ReadMethod)
	b.WriteString("| repeat | backlog MiB | resident after drop MiB | drain s | drain MB/s | raw read MB/s | drain ÷ read | send p99 before ms | send p99 during ms | during ÷ before | resident after drain MiB | send errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, run := range r.Runs {
		fmt.Fprintf(&b, "| %d | %d | %d | %.2f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %d of %d | %d |\n", i+1, run.BacklogBytes>>20,
			run.Drop.ResidentAfter>>20, run.DrainSeconds, run.DrainMBps, run.ReadMBps, run.DrainRatio,
			float64(run.SendBefore.P99)/1000, float64(run.SendDuring.P99)/1000, run.P99Ratio,
			run.ResidentAfterDrain>>20, run.StoreBytes>>20, run.SendErrors)
	}
	if w := r.Warm; w != nil {
		fmt.Fprintf(&b, "| warm | %d | %d (not dropped) | %.2f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %d of %d | %d |\n", w.BacklogBytes>>20,
			w.Drop.ResidentAfter>>20, w.DrainSeconds, w.DrainMBps, w.ReadMBps, w.DrainRatio,
			float64(w.SendBefore.P99)/1000, float64(w.SendDuring.P99)/1000, w.P99Ratio, w.ResidentAfterDrain>>20, w.StoreBytes>>20, w.SendErrors)
		if w.DrainMBps > 0 {
			fmt.Fprintf(&b, "\nCold over warm drain: %.2f× (%.1f ÷ %.1f MB/s): the warm row is the drain with no disk reads, what the rest of the path (broker, consumers, this machine's CPUs) allows.\n",
				r.Median.DrainMBps/w.DrainMBps, r.Median.DrainMBps, w.DrainMBps)
		}
	}
	writeReadCache(&b, r)
	writeLoopback(&b, r)
	yes := map[bool]string{true: "yes", false: "**no**"}
	fmt.Fprintf(&b, "\n| target | measured (median) | met |\n|---|---|---|\n")
	if r.DrainNA {
		fmt.Fprintf(&b, "| drain ≥ %.2f× raw sequential read | %.2f× (%.1f ÷ %.1f MB/s), consumers paced at %g MB/s of bodies | not applicable (paced) |\n",
			r.DrainTarget, r.Median.DrainRatio, r.Median.DrainMBps, r.Median.ReadMBps, s.PaceMBps)
	} else {
		fmt.Fprintf(&b, "| drain ≥ %.2f× raw sequential read | %.2f× (%.1f ÷ %.1f MB/s) | %s |\n",
			r.DrainTarget, r.Median.DrainRatio, r.Median.DrainMBps, r.Median.ReadMBps, yes[r.DrainMet])
	}
	fmt.Fprintf(&b, "| send p99 during the drain ≤ %.2f× before | %.2f× | %s |\n", r.P99Target, r.MedianP99Ratio, yes[r.P99Met])
	return b.String()
}

// writeLoopback holds the drain against what loopback TCP alone carries
// on this machine (bench loopback), when the run measured it.
func writeLoopback(b *strings.Builder, r *Result) {
	m := r.Median
	if m.LoopbackMBps <= 0 {
		return
	}
	fmt.Fprintf(b, "\nLoopback ceiling: %d TCP connections on 127.0.0.1 moving bytes and doing nothing else (`samsa bench loopback --conns %d`, right after the raw read) carried %.1f MB/s; the drain reached %.2f× of it.",
		r.Settings.Consumers, r.Settings.Consumers, m.LoopbackMBps, m.LoopbackRatio)
	if need := r.DrainTarget * m.ReadMBps; need > m.LoopbackMBps && !r.DrainNA {
		fmt.Fprintf(b, " The drain target, %.2f× the raw read (%.1f MB/s), is %.2f× what loopback TCP alone carries here: no consumer that receives the backlog over TCP on this machine can reach it, before the broker reads the log or anyone frames and decodes a message.",
			r.DrainTarget, need, need/m.LoopbackMBps)
	}
	b.WriteString("\n")
}

// paceNote says how fast the consumers drained.
func paceNote(s Settings) string {
	note := " at full speed"
	if s.PaceMBps > 0 {
		note = fmt.Sprintf(" paced together at %g MB/s of message bodies", s.PaceMBps)
	}
	if s.DirectColdReads {
		note += ", the broker reading what the page cache lacks with O_DIRECT (directColdReads)"
	}
	return note
}

func dropMethod(m string) string {
	switch m {
	case "fadvise":
		return "fdatasync + posix_fadvise(DONTNEED) on every store file"
	case "none (warm)":
		return "nothing (warm: the backlog stays in the page cache)"
	}
	return m
}

// writeReadCache says how the store's read block cache served the drains,
// when it counted: blocks read against the backlog's blocks (once each is
// the cache holding every queue's stretch until all have read it).
func writeReadCache(b *strings.Builder, r *Result) {
	runs := append([]Run(nil), r.Runs...)
	names := make([]string, 0, len(runs)+1)
	for i := range runs {
		names = append(names, fmt.Sprintf("repeat %d", i+1))
	}
	if r.Warm != nil {
		runs, names = append(runs, *r.Warm), append(names, "warm")
	}
	var parts []string
	for i, run := range runs {
		if run.ReadCacheHits+run.ReadCacheMisses == 0 {
			continue
		}
		blocks := (run.BacklogBytes + readCacheBlock - 1) / readCacheBlock
		direct := ""
		if run.ReadCacheDirect > 0 {
			direct = fmt.Sprintf(" (%d with O_DIRECT)", run.ReadCacheDirect)
		}
		parts = append(parts, fmt.Sprintf("%s %d block reads%s for %d blocks of backlog (%.2f each), %d hits",
			names[i], run.ReadCacheMisses, direct, blocks, float64(run.ReadCacheMisses)/float64(max(blocks, 1)), run.ReadCacheHits))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "\nRead block cache (storage/blockcache.go) during the drains: %s.\n", strings.Join(parts, "; "))
	}
}

// readCacheBlock is the read block cache's block (storage.readBlockSize).
const readCacheBlock = 256 << 10
