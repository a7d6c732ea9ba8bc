// Package bench is Samsa's storage lab: micro-benchmarks of the raw disk and
// of the storage engine, an experiment runner over a matrix of engine
// configurations, Markdown and SVG reports, and a regression gate.
//
// Every timing is read as a ratio to the raw disk measured by the same
// program in the same run (see DESIGN.md, "Lab"):
//
//   - RunDisk is the reference: plain sequential pwrite of one block size
//     into a preallocated file, with an fsync policy (every write, on an
//     interval, never), N writers, an HDR histogram per write(+fsync).
//   - ProbeFsync measures a lone fdatasync after one block write: its p99 is
//     what a sync (group commit) append's p99 is compared with.
//   - RunStorage opens a storage.Store with the given Options and drives it
//     with N closed-loop writers; the store's own counters (fsyncs, batches,
//     write syscalls, bytes) come with the latency histogram, and the
//     data dir's block device's write counters over the same window
//     (DeviceIO; none, with the reason, where the device cannot be found).
//   - Experiment files (experiments/*.json, kind "storage") name a matrix of
//     backends × flush policies × record sizes × writers × group-commit
//     limits; Run repeats every cell and the disk references it needs in
//     rounds, and records each cell's medians, spread and ratios.
//   - Markdown and WriteCharts render a result as Markdown tables and SVG
//     charts; Lab is the storage kind of the lab's pipeline (package
//     internal/lab), which runs experiment files, writes their results and
//     rewrites their sections of PERFORMANCE.md; Check compares a result's
//     ratios with a baseline's.
//   - RunAB measures two binaries in alternated A-B-B-A rounds of one
//     measuring command (a bench subcommand, or loadgen against an embedded
//     cluster: the wire), with a bootstrap interval of the median B/A and a
//     verdict; RunGate is the performance gate over a few such cells (a
//     commit's binary against its parent's), and PerfGate builds the base
//     commit in a temporary git worktree first (make perf-gate).
//
// Concurrency: each Run* function owns the goroutines it starts and stops
// them before it returns. Runs are meant to go one at a time: two at once
// measure each other. Nothing in the package keeps global state.
package bench
