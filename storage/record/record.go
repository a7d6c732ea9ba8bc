// Package record is the codec of the CommitLog's stored-message record:
// RocketMQ's stored format (CommitLog.calMsgLength / MessageDecoder, magic
// code V1), so a pull response can be a slice of the log sent as it lies and
// any RocketMQ 4.x client decodes it.
//
// Layout, big-endian, shown with IPv4 hosts (SysFlag bits 4 and 5 clear):
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
//	 36     4  SYSFLAG            compressed, multi-tags, transaction, host-family bits
//	 40     8  BORNTIMESTAMP      ms, set by the producer
//	 48     8  BORNHOST           IPv4 4 + port 4 (IPv6: 16 + 4, SysFlag bit 4)
//	 56     8  STORETIMESTAMP     ms, set by the broker at append
//	 64     8  STOREHOST          IPv4 4 + port 4 (IPv6: 16 + 4, SysFlag bit 5)
//	 72     4  RECONSUMETIMES
//	 76     8  PREPAREDTXOFFSET
//	 84  4+n   BODY               length + bytes
//	  .  1+n   TOPIC              length + bytes (1 to 127: V1's signed length byte)
//	  .  2+n   PROPERTIES         length + "name\x01value\x02" pairs (at most 32767)
//
// Every record written by this package ends with one more property, last:
// PropertyCRC32 ("__CRC32#"), exactly as RocketMQ 5 writes it with
// enabledAppendPropCRC: the 20 bytes "__CRC32#" 0x01 d0..d9 0x02, where
// d0..d9 are the ten decimal digits of CRC32 (IEEE) & 0x7fffffff of the
// record's first TOTALSIZE-20 bytes, least significant digit first (the
// CRC covers everything but these 20 bytes, the offsets and timestamps the
// store patches in included). If the caller's properties do not end with
// 0x02 one is added before it. The body CRC alone would let a torn header,
// topic or property pass; the whole-record CRC lets recovery tell a torn
// record from a good one. Decode and Validate require it.
//
// A blank record (MagicBlank) fills a segment's tail that a record did not
// fit in: TOTALSIZE (the bytes left in the segment) and MAGICCODE only,
// meaning "skip to the next segment". The store always leaves room for one
// (BlankSize bytes) after the last record of a segment.
//
// Concurrency: every function is safe for concurrent use on distinct
// buffers; none allocates on success except EncodeProperties,
// ParseProperties and the String helpers.
package record

// Magic codes (RocketMQ's MESSAGE_MAGIC_CODE 0xdaa320a7 and
// BLANK_MAGIC_CODE 0xcbd43194, as signed Java ints).
const (
	MagicMessage int32 = -626843481
	MagicBlank   int32 = -875286124
)

// Field offsets that do not depend on the host families.
const (
	OffTotalSize   = 0
	OffMagic       = 4
	OffBodyCRC     = 8
	OffQueueID     = 12
	OffFlag        = 16
	OffQueueOffset = 20
	OffPhysOffset  = 28
	OffSysFlag     = 36
	OffBornTime    = 40
	OffBornHost    = 48
)

// SysFlag bits (RocketMQ's MessageSysFlag).
const (
	FlagCompressed      int32 = 0x1
	FlagMultiTags       int32 = 0x1 << 1
	TransactionNotType  int32 = 0
	TransactionPrepared int32 = 0x1 << 2
	TransactionCommit   int32 = 0x2 << 2
	TransactionRollback int32 = 0x3 << 2
	FlagBornHostV6      int32 = 0x1 << 4
	FlagStoreHostV6     int32 = 0x1 << 5
	FlagNeedUnwrap      int32 = 0x1 << 6
	FlagInnerBatch      int32 = 0x1 << 7
	// CompressionTypeMask selects the compression type (LZ4 1, ZSTD 2,
	// ZLIB 3, shifted left by 8).
	CompressionTypeMask int32 = 0x7 << 8
)

// TransactionType returns the transaction bits of a SysFlag
// (TransactionNotType, ...Prepared, ...Commit or ...Rollback).
func TransactionType(sysFlag int32) int32 { return sysFlag & TransactionRollback }

// Property names and separators (RocketMQ's MessageConst / MessageDecoder).
const (
	NameValueSeparator = 0x01
	PropertySeparator  = 0x02
	PropertyCRC32      = "__CRC32#"
	PropertyTags       = "TAGS"
	PropertyKeys       = "KEYS"
	// CRCReservedLen is the size of the trailing CRC property:
	// "__CRC32#" 0x01, ten digits, 0x02.
	CRCReservedLen = len(PropertyCRC32) + 1 + 10 + 1
)

// Size limits.
const (
	// BlankSize is the bytes a blank record writes (it declares more).
	BlankSize = 8
	// MaxTopicLen is V1's limit: the topic length is one signed byte.
	MaxTopicLen = 127
	// MaxPropertiesLen is the limit of the signed 16-bit properties
	// length, the CRC property included.
	MaxPropertiesLen = 32767
	// fixedLen is the bytes of every field but the hosts and the
	// variable parts' contents: 4+4+4+4+4+8+8+4+8 +8 +4+8 +4 +1 +2.
	fixedLen = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 + 4 + 1 + 2
	// MinSize is the smallest valid message record: IPv4 hosts, empty
	// body, a one-byte topic and only the CRC property.
	MinSize = fixedLen + 8 + 8 + 1 + CRCReservedLen
)

// MaxSize is the largest message record with a body of at most maxBody
// bytes: IPv6 hosts, the longest topic and full properties.
func MaxSize(maxBody int) int {
	return fixedLen + 2*(16+4) + maxBody + MaxTopicLen + MaxPropertiesLen
}

func hostLen(sysFlag, bit int32) int {
	if sysFlag&bit != 0 {
		return 16 + 4
	}
	return 4 + 4
}

// StoreTimeOffset returns where STORETIMESTAMP lies in a record with this
// SysFlag (56 with an IPv4 born host).
func StoreTimeOffset(sysFlag int32) int { return OffBornHost + hostLen(sysFlag, FlagBornHostV6) }

// bodyLenOffset returns where the body length lies.
func bodyLenOffset(sysFlag int32) int {
	return StoreTimeOffset(sysFlag) + 8 + hostLen(sysFlag, FlagStoreHostV6) + 4 + 8
}
