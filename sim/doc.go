// Package sim runs Samsa's replication in one process under a seed:
// nodes on crash-simulating file systems (vfs.MemFS: a process crash
// keeps what the kernel holds, a power loss only what was synced, torn at
// random), an in-memory network with faults (Net: partitions, slow links,
// connections reset when a node dies), and virtual time when run inside
// testing/synctest's bubble. A seed chooses the workload and the fault
// schedule; the run checks named invariants as it goes and at the end
// (InvAckedKept, InvSameLog, InvEpochRises, InvCatchUp) and reports the
// first broken one as a Violation with the seed and the trace that replay
// it.
//
// What it covers today: one master and one slave with synchronous
// replication (ha.Master, ha.Slave over real storage.Stores); faults:
// partitions between them, slow links (every write delayed, in order), process crashes and power losses of the slave,
// process crashes of the master and, under sync flush, its power losses. Not yet: the name server, the fail-over
// controller and its elections, several slaves, consumers, one-way
// partitions, bit flips and lost fsyncs on the file systems.
package sim
