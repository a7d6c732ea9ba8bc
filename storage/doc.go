// Package storage is Samsa's message store: one CommitLog of fixed-size
// segments for all topics (RocketMQ's layout: appends stay sequential
// however many queues exist), a ConsumeQueue per (topic, queue) indexing
// it, group commit, crash recovery and retention.
//
// # Contract
//
//   - Open(opts) recovers and starts the store; Close stops it cleanly.
//   - Append and AppendBatch may be called from any number of goroutines.
//     Each takes one short lock (the append lock: assign queue offsets,
//     physical offset and store time, seal the record's CRC, copy it into
//     the segment); encoding happens before it. Queue offsets of a queue
//     follow the log order.
//   - What an acknowledged Append survives is its durability level
//     (durability.go): power-loss with FlushSync; process-crash by
//     default with FlushAsync and FlushNone: Append returns only once
//     its bytes are in the kernel (page cache, or the device for
//     O_DIRECT): for pwrite, odirect and uring copied into their stage, a
//     shared mapping of a file that Open replays after a crash
//     (stage.go), from which the backend writes the segment file in large
//     writes; for mmap copied into the mapping; else (Options.NoStage)
//     written out by the appender itself, batched under load
//     (handoff.go); memory with Options.AckBuffered. A record is indexed
//     for readers only once it reaches that level, so no reader sees a
//     record that a crash the level covers takes back.
//   - The log reaches the file as a prefix: no byte of a segment is
//     handed to the kernel before every byte before it in the log is (a
//     roll writes out the old segment first, its stage too).
//   - With FlushSync an Append returns only once its record is durable.
//     The flusher goroutine does group commit (see flush.go): waiters are
//     released by the fsync that covers them, a lone writer waits for no
//     timer (and runs its own round, without a hand-off, unless
//     Flush.NoOwnRound: lone.go), and an fsync failure is terminal: the store is broken
//     (Err), every waiting and later Append fails with ErrBroken wrapping
//     the cause, and nothing is acknowledged as durable again.
//   - A write, allocate or create error refuses the append, writes
//     nothing a reader or recovery could see, and leaves the store usable
//     (ErrDiskFull wraps ENOSPC).
//   - A full disk is not fatal anywhere. A ConsumeQueue entry that cannot
//     be written is retried until it lands, its queue's later records
//     waiting behind it (dispatch_retry.go). Open succeeds on a full disk,
//     and the store is read-only (appends fail with ErrDiskFull, reads are
//     served) while it lacks space for what it must write first; it leaves
//     that state by itself (readonly.go). Close on a full disk returns
//     ErrDiskFullAtClose and the next Open recovers.
//   - Running out of descriptors or memory (EMFILE, ENFILE, ENOMEM) on an
//     open, create, mmap or ring setup is not fatal either: the append or
//     read that met it fails with ErrResourceBusy (a segment roll that
//     failed half-way removes its file), a ConsumeQueue entry waits and is
//     retried as on a full disk, and the next call after a descriptor is
//     free works. ConsumeQueue files are opened on use and at most
//     Options.ConsumeQueueMaxOpenFiles stay open (package consumequeue).
//   - Readers (GetMessages, ReadAt, the offset queries) may run
//     concurrently with everything. Records are readable by physical
//     offset once written (WrittenOffset), indexed in their queue by the
//     dispatcher goroutine once they reach the store's durability level,
//     which then calls the OnDispatch callbacks.
//   - GetMessages serves no record it has not checked (size, magic,
//     physical offset, whole-record CRC): it stops before a corrupt one,
//     answers a read starting at one with a *CorruptRecordError and a
//     NextOffset past it, and quarantines it (get_verify.go).
//   - QueryByKey (keyindex.go) finds records by a KEYS key or UNIQ_KEY
//     through the key index the dispatcher keeps (after a round's
//     ConsumeQueue entries); it serves only records it read and checked
//     against the key, and may run concurrently with everything.
//   - Replication (replica.go): ReadLog copies a master's whole records
//     up to HandedOffset, and may run concurrently with everything;
//     AppendReplicated writes them into a slave at the same offsets
//     through the normal write path, checked record by record; FlushTo
//     waits for durability. TruncateTo and ResetTo cut the log
//     (replica_cut.go); their caller runs no append meanwhile, readers may
//     run and get errors or nothing, never a record out of place.
//   - WrittenOffset >= HandedOffset >= DurableOffset; all only grow,
//     except that TruncateTo and ResetTo set them all to the cut.
//
// # Files
//
//	Dir/LOCK                       advisory lock: one process per store
//	Dir/abort                      present while open; after a crash, Open scans
//	Dir/checkpoint                 durable and dispatched offsets (checkpoint.go)
//	Dir/quarantine.json            corrupt records reads found (quarantine.go)
//	Dir/verified                   the verified mark: the log below it was read back
//	                               and found good (verified.go)
//	Dir/reset                      a ResetTo decided and not finished: Open
//	                               finishes it (replica_cut.go)
//	Dir/commitlog/<20-digit base>  segments; records as in package record
//	Dir/consumequeue/<topic>/<q>/  package consumequeue
//	Dir/index/                     the message key index: package index (keyindex.go)
//	Dir/lost+found/<UTC time>/     what recovery, Repair or TruncateTo cut off the log, with
//	                               manifest.json (lostfound.go); never read back
//
// A segment's records are followed by a blank record (record.MagicBlank)
// covering the rest of its capacity once the next record does not fit;
// the next record starts the next segment, named by its offset.
//
// # Goroutines
//
// The flusher (flush.go), the dispatcher (dispatch.go), the background
// jobs (checkpoints, retention: checkpoint.go) and the scrubber (scrub.go,
// started and waited for by the background goroutine) run from Open to
// Close; Open's verification (verify_open.go) from Open until it is done
// or Close; each one's comment says what wakes it and what it owns.
//
// # Damage
//
// Recovery cuts a torn tail after a crash and keeps what it cut in
// lost+found (recovery.go), as TruncateTo keeps a replica's diverged tail
// (replica_keep.go); the scrubber re-reads sealed segments at rest and
// reports bad records (ScrubStatus, Metrics), and after each Open what was
// written since the verified mark is checked the same way at full speed
// (verify_open.go; Unverified says how much is left); Damaged lists what
// reads and those checks found bad, and RepairRange writes a healthy
// replica's copy of such a range back in place (repair_range.go); on a
// stopped store Verify checks everything and Repair makes a store that
// will not open openable (samsa store verify|repair DIR).
//
// All file I/O goes through package vfs; the segment write path is a
// backend.Segment chosen by name (Options.Backend).
package storage
