// Package record is the codec of the CommitLog's stored-message record:
// RocketMQ's stored format (CommitLog.calMsgLength / MessageDecoder, magic
// code V1), so a pull response can be a slice of the log sent as it lies and
// any RocketMQ 4.x client decodes it.
//
// Layout, big-endian, IPv4 hosts (sysflag bits 4 and 5 clear):
//
//	off  size  field              why
//	  0     4  TOTALSIZE          record length, this field included; lets a scan hop
//	  4     4  MAGICCODE          MagicMessage or MagicBlank; tells a record from zeros
//	  8     4  BODYCRC            CRC32 (IEEE) of the body & 0x7fffffff, as RocketMQ
//	 12     4  QUEUEID
//	 16     4  FLAG               the producer's int flag
//	 20     8  QUEUEOFFSET        index of the record in its consume queue
//	 28     8  PHYSICALOFFSET     where the record starts in the log: its identity, so
//	                              stale bytes of a recycled file never pass as records
//	 36     4  SYSFLAG            compressed, multi-tags, transaction bits
//	 40     8  BORNTIMESTAMP      ms, set by the producer
//	 48     8  BORNHOST           IPv4 4 + port 4
//	 56     8  STORETIMESTAMP     ms, set by the broker at append
//	 64     8  STOREHOST          IPv4 4 + port 4
//	 72     4  RECONSUMETIMES
//	 76     8  PREPAREDTXOFFSET
//	 84  4+n   BODY               length + bytes
//	  .  1+n   TOPIC              length + bytes (at most 127)
//	  .  2+n   PROPERTIES         length + "name\x01value\x02" pairs
//
// A record written by Samsa carries one more property, last: PropertyCRC32
// ("__CRC32#", as RocketMQ 5's CRC check) whose value is ten decimal digits,
// the CRC32 (IEEE) of the whole record up to that value. The body CRC alone
// would let a torn topic or property pass; the whole-record CRC lets recovery
// tell a torn record from a good one.
//
// A blank record (MagicBlank) fills a segment's tail that a record did not fit
// in: TOTALSIZE and MAGICCODE only, meaning "skip to the next segment".
package record
