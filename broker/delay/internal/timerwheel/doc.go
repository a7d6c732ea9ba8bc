// Package timerwheel is the on-disk part of Samsa's timer messages, in the
// spirit of RocketMQ's TimerMessageStore: a timer log of fixed-size
// entries, each naming a message in the CommitLog and chaining back to the
// previous entry of its slot, and a wheel file of slots, each naming the
// first and last entry of the messages due in one precision-wide span of
// time. A million pending timers cost a million log entries and the
// wheel's touched slots on disk, and nothing in memory.
//
// # Contract
//
// A Wheel is owned by one goroutine (the broker's timer loop): Add, Slot,
// Sync, Checkpoint, Trim and Close are not safe for concurrent use. All
// file I/O goes through storage/vfs.
//
// # Files (Dir/)
//
//	timerlog/<20-digit base>   log segments of SegmentSize bytes
//	timerwheel                 Slots slots of 32 bytes
//	timercheck                 the checkpoint (written atomically)
//
// Log entry (48 bytes, big-endian):
//
//	off size field        why
//	0   4    magic        0x544D5231: tells an entry from zeros or garbage
//	4   4    msgSize      the CommitLog record's size, to read it in one go
//	8   8    prev         the slot's previous entry (log position), -1 none
//	16  8    deliverMs    the slot's start time: the chain's owner
//	24  8    phys         the CommitLog record's offset
//	32  8    queueOffset  its offset in the timer topic's queue, to resume
//	                      enqueueing after a crash
//	40  4    exactOffset  due time - deliverMs: the slot is read at its start
//	                      and each entry delivered at its own time
//	44  4    crc          CRC-32 (IEEE) of bytes 0..43
//
// Slot (32 bytes, at (deliverMs/precision mod Slots)·32):
//
//	0 8 timeUnits  deliverMs/precision: a slot left from an earlier turn
//	               of the wheel does not match and reads as empty
//	8 8 first      first entry, 16 8 last entry (the chain's head)
//	24 4 count     entries, 28 4 reserved
//
// # Recovery
//
// The log is the truth, the wheel a cache of it. Open scans the log
// (entries checked by magic and CRC; the log is cut at the first bad
// one, a torn tail). After a clean Close (the checkpoint says so and the
// log ends where it says) the wheel is used as it is; otherwise it is
// rebuilt from the log: entries are linked again in log order, which is
// the order they were first linked in. Segments whose every entry is due
// before the read time are deleted (Trim).
package timerwheel
