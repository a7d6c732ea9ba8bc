// Package consumequeue is the per-(topic, queue) index of the CommitLog: for
// every message of a queue, in queue order, where its record lies in the log.
// It is RocketMQ's ConsumeQueue, byte for byte.
//
// # Layout
//
// A queue is a directory <Dir>/<topic>/<queueId>/ of files holding
// EntriesPerFile fixed-size entries each (default 300,000: 6,000,000 bytes).
// A file is named by the 20-digit zero-padded byte offset of its first entry,
// so the n-th entry of a queue lives in file (n/EntriesPerFile)*EntriesPerFile*20
// at byte (n%EntriesPerFile)*20. Entries are big-endian:
//
//	off  size  field        why
//	  0     8  PHYSOFFSET   where the record starts in the CommitLog: the read path
//	  8     4  SIZE         the record's total size: one ReadAt fetches it; never 0,
//	                        so a zero entry (unwritten or lost bytes) ends a queue
//	 12     8  TAGSCODE     hash of the TAGS property: a pull filters by tag without
//	                        reading the record
//
// Entries of a queue point at strictly increasing, non-overlapping records
// (PhysOffset >= previous PhysOffset + previous Size). Append enforces it and
// recovery relies on it to spot torn or stale bytes.
//
// # Durability and recovery
//
// Append buffers entries in memory (visible to readers at once) and writes
// them to the file with WriteAt in blocks; Flush writes what is buffered and
// syncs every dirty file. Nothing is promised durable before Flush returns.
// When a queue moves to a new file the full one is synced in the
// background (the dispatcher does not wait for it), and before the queue
// moves on again that sync must have ended; every new file or directory has
// its parent directory synced. So after a crash every file but the last two
// is whole. Recovery (OpenTable) scans the last two files (and any file
// that is not whole) and ends the queue at the first entry that is
// zero, torn (a partial entry at the end of the file), or breaks the ordering
// above; the bytes after it are truncated away and the files after it removed,
// durably, so they cannot resurrect. The CommitLog is the source of truth: the
// store trims a queue to its recovered log (TruncateFromPhys) and re-dispatches
// the records after its checkpoint, which Append accepts as no-ops where the
// queue already holds them. Only the last entry recovery finds can be torn
// past every check (its trailing bytes, the tags code, lost while the rest
// survived); Append replaces that one if the CommitLog disagrees.
//
// What a table reopens after a process crash may be in the page cache
// only: entries never synced, and files or directories whose names no
// directory sync covered (the process died between a Create and its
// SyncDir). Re-dispatch finds such entries and files in place and neither
// writes nor creates, so nothing would sync them: a store that adopts them
// calls Table.MarkUnsynced, and the next Flush syncs every file, every
// queue directory, the topic directories and the root.
//
// Retention (DeleteBelowPhys) removes whole files from the front, never the
// last one, so a queue's offsets survive even when all its messages expired.
// After a restart MinOffset is the first file's start until the store applies
// retention again.
//
// # Errors
//
// A failed write (WriteAt, Create, MkdirAll: a full disk, EIO) refuses the
// Append or Flush that made it and changes nothing else: buffered entries
// stay buffered (and readable) and are written again by the next Append or
// Flush, so a caller that retries the same Append after the disk has room
// loses nothing. A failed fsync sticks: the kernel may have dropped the
// dirty pages, so every later Append and Flush of that queue returns it.
//
// A file, a directory sync or a read that cannot open its file for want of a
// descriptor or memory (EMFILE, ENFILE, ENOMEM: vfs.IsResourceError) is
// refused like a failed write, never sticks, and works once one is free.
//
// # Open files
//
// A queue's files are opened when first used, not when the table opens, and
// at most Options.MaxOpenFiles stay open across the table: the least recently
// used idle one is closed (synced first if written since its last sync) when
// another must open. 10,000 queues need no more descriptors than the cap.
// See handles.go.
//
// # Concurrency
//
// Table and Queue are safe for concurrent use. A queue has one appender at a
// time in practice (the store's dispatcher); Append copies 20 bytes under a
// short exclusive lock, and syncs a full file and creates the next one
// without it. Readers (Entry, Entries, OffsetByTime) take that lock shared
// only to snapshot bounds and copy buffered entries, and do their file reads
// outside it, so a reader waiting on a cold page does not stall the appender.
// Flush syncs outside it too. TruncateFromPhys and Close exclude appenders
// and readers; DeleteBelowPhys excludes readers only while it detaches files,
// and removes them without a lock.
//
// All I/O goes through package vfs.
package consumequeue
