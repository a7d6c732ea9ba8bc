// Package index is the store's key index: for a message key (the KEYS
// property, space-separated) or unique id (UNIQ_KEY) of a topic, where its
// records lie in the CommitLog. It is RocketMQ's IndexFile in spirit: a
// fixed header, a table of hash slots, and linked entries appended in log
// order, files rolled at MaxEntries and named by time.
//
// Keys are scoped by topic: an entry holds the hash of "topic#key" (one
// index for every topic, as RocketMQ's, so a thousand topics do not cost a
// thousand slot tables). A hash names candidates only: the caller reads the
// record at each offset and keeps it only if the key really is among its
// keys (collisions, and entries a crash left stale, are filtered there).
//
// # Layout
//
// Dir/<yyyyMMddHHmmssSSS> is one file, named by the store time of its first
// entry (UTC). Big-endian:
//
//	off            size  field       why
//	  0               8  MAGIC       "SAMSAIX1": format and version
//	  8               4  SLOTS       hash slots in this file (fixed at creation)
//	 12               4  MAXENTRIES  entries it may hold (fixed at creation)
//	 16               8  BEGINTIME   ms, store time of the first entry: the base of TIMEDIFF
//	 24               8  BEGINPHYS   CommitLog offset of the first entry
//	 32               4  CRC         CRC32 (IEEE) of bytes 0-31: a header is whole or refused
//	 36              28  reserved
//	 64         4×SLOTS  SLOT[i]     number (from 1) of the newest entry whose hash%SLOTS is i, 0: none
//	  .   20×MAXENTRIES  ENTRY[n]    n from 1: HASH 4, PHYS 8, TIMEDIFF 4 (seconds since
//	                                 BEGINTIME), PREV 4 (the entry before it in the same
//	                                 slot, 0: none)
//
// Entries are appended in log order, so PHYS grows along a file and from
// file to file, and a chain (SLOT, then PREV) walks one slot newest first.
//
// Dir/checkpoint says what is durable (written atomically: temp file,
// fsync, rename, fsync of the directory): the log offset END below which
// every record is indexed, and per file its entry count, last PHYS and last
// store time, plus a CLEAN flag set only by Close.
//
// # Durability and recovery
//
// The active (newest) file's slot table lives in memory and its entries are
// buffered; Flush writes the entries, syncs and writes the checkpoint; a
// roll writes the full file's slot table and syncs it before the next file
// is made; Close writes everything and a clean checkpoint. Open trusts only
// the checkpoint: files it does not list are removed, every listed file is
// cut to its entry count, and unless the checkpoint is clean the slot table
// of every file that was not full is rebuilt from its entries (slot writes
// are never synced on their own, so a crash can leave any mix of them).
// The caller then indexes the log again from End (Put of a record below End
// is a no-op). Entries at or past a log cut are dropped by TruncateFrom;
// retention removes files wholly below the log's first offset
// (DeleteBefore).
//
// # Concurrency
//
// Put, TruncateFrom and DeleteBefore are the writer's (the store's
// dispatcher; cuts and retention hold it off); Lookup may run concurrently
// with everything; Flush may run concurrently with Put.
package index
