package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// Fields are the contents of a message record. The encoders read them;
// the store sets QueueOffset, PhysOffset and StoreTimestamp (see Seal).
type Fields struct {
	QueueID     int32
	Flag        int32
	QueueOffset int64
	PhysOffset  int64
	// SysFlag is written as given, except bits 4 and 5 (FlagBornHostV6,
	// FlagStoreHostV6), which the encoder sets from the hosts' families.
	SysFlag          int32
	BornTimestamp    int64
	BornHost         netip.AddrPort // IPv4 (or IPv4-mapped) takes 8 bytes, IPv6 20; zero is 0.0.0.0:0
	StoreTimestamp   int64
	StoreHost        netip.AddrPort
	ReconsumeTimes   int32
	PreparedTxOffset int64
	Topic            string // 1 to MaxTopicLen bytes
	Body             []byte
	// Properties are "name\x01value\x02" pairs (EncodeProperties,
	// AppendProperty). A PropertyCRC32 pair in them is dropped: the
	// encoder writes its own, last.
	Properties []byte
}

// sysFlag returns f.SysFlag with the host-family bits set from the hosts.
func (f *Fields) sysFlag() int32 {
	s := f.SysFlag &^ (FlagBornHostV6 | FlagStoreHostV6)
	if isV6(f.BornHost) {
		s |= FlagBornHostV6
	}
	if isV6(f.StoreHost) {
		s |= FlagStoreHostV6
	}
	return s
}

func isV6(ap netip.AddrPort) bool {
	a := ap.Addr()
	return a.IsValid() && a.Is6() && !a.Is4In6()
}

// Non-constant copies, so they convert to uint32 with their bits.
var magicMessage, magicBlank = MagicMessage, MagicBlank

var crcPairStart = []byte(PropertyCRC32 + "\x01")

// splitCRC returns props without a PropertyCRC32 pair, as the bytes before
// and after it (after is nil when there is none).
func splitCRC(props []byte) (before, after []byte) {
	from := 0
	for {
		i := bytes.Index(props[from:], crcPairStart)
		if i < 0 {
			return props, nil
		}
		i += from
		if i == 0 || props[i-1] == PropertySeparator {
			end := bytes.IndexByte(props[i:], PropertySeparator)
			if end < 0 {
				return props[:i], props[len(props):]
			}
			return props[:i], props[i+end+1:]
		}
		from = i + 1
	}
}

// propertiesLen returns the stored properties' length: the caller's
// without a CRC pair, a separator if they lack a trailing one, and the CRC
// property.
func propertiesLen(props []byte) (n int, sep bool) {
	before, after := splitCRC(props)
	n = len(before) + len(after)
	last := byte(PropertySeparator)
	if len(after) > 0 {
		last = after[len(after)-1]
	} else if len(before) > 0 {
		last = before[len(before)-1]
	}
	sep = n > 0 && last != PropertySeparator
	if sep {
		n++
	}
	return n + CRCReservedLen, sep
}

// Size returns the size of f's record, or an error if f cannot be encoded
// (ErrTopic, ErrPropertiesTooLong).
func (f *Fields) Size() (int, error) {
	if len(f.Topic) == 0 || len(f.Topic) > MaxTopicLen {
		return 0, fmt.Errorf("%w: %d bytes", ErrTopic, len(f.Topic))
	}
	pl, _ := propertiesLen(f.Properties)
	if pl > MaxPropertiesLen {
		return 0, fmt.Errorf("%w: %d bytes with the CRC property, limit %d", ErrPropertiesTooLong, pl, MaxPropertiesLen)
	}
	sf := f.sysFlag()
	return fixedLen + hostLen(sf, FlagBornHostV6) + hostLen(sf, FlagStoreHostV6) +
		len(f.Body) + len(f.Topic) + pl, nil
}

// Encode writes f's complete record at the start of dst and returns its
// size. It is EncodeUnsealed followed by Seal with f's offsets and store
// timestamp.
func Encode(dst []byte, f *Fields) (int, error) {
	n, err := EncodeUnsealed(dst, f)
	if err != nil {
		return 0, err
	}
	Seal(dst[:n], f.QueueOffset, f.PhysOffset, f.StoreTimestamp)
	return n, nil
}

// EncodeUnsealed writes f's record at the start of dst, all but the
// whole-record CRC digits, and returns its size. It does the costly part
// (copying the body, the body CRC) so that Seal, run where the offsets are
// known, only patches three fields and computes one CRC.
func EncodeUnsealed(dst []byte, f *Fields) (int, error) {
	n, err := f.Size()
	if err != nil {
		return 0, err
	}
	if len(dst) < n {
		return 0, fmt.Errorf("%w: %d bytes for a %d-byte record", ErrBufferTooSmall, len(dst), n)
	}
	b := dst[:n]
	be := binary.BigEndian
	sf := f.sysFlag()
	be.PutUint32(b[OffTotalSize:], uint32(n))
	be.PutUint32(b[OffMagic:], uint32(magicMessage))
	be.PutUint32(b[OffBodyCRC:], BodyCRC(f.Body))
	be.PutUint32(b[OffQueueID:], uint32(f.QueueID))
	be.PutUint32(b[OffFlag:], uint32(f.Flag))
	be.PutUint64(b[OffQueueOffset:], uint64(f.QueueOffset))
	be.PutUint64(b[OffPhysOffset:], uint64(f.PhysOffset))
	be.PutUint32(b[OffSysFlag:], uint32(sf))
	be.PutUint64(b[OffBornTime:], uint64(f.BornTimestamp))
	p := putHost(b, OffBornHost, f.BornHost)
	be.PutUint64(b[p:], uint64(f.StoreTimestamp))
	p = putHost(b, p+8, f.StoreHost)
	be.PutUint32(b[p:], uint32(f.ReconsumeTimes))
	be.PutUint64(b[p+4:], uint64(f.PreparedTxOffset))
	p += 12
	be.PutUint32(b[p:], uint32(len(f.Body)))
	p += 4
	p += copy(b[p:], f.Body)
	b[p] = byte(len(f.Topic))
	p++
	p += copy(b[p:], f.Topic)
	pl, sep := propertiesLen(f.Properties)
	be.PutUint16(b[p:], uint16(pl))
	p += 2
	before, after := splitCRC(f.Properties)
	p += copy(b[p:], before)
	p += copy(b[p:], after)
	if sep {
		b[p] = PropertySeparator
		p++
	}
	p += copy(b[p:], crcPairStart)
	for i := 0; i < 10; i++ {
		b[p+i] = '0'
	}
	b[p+10] = PropertySeparator
	return n, nil
}

// putHost writes ap at b[off:] (4- or 16-byte address, then the port as a
// 4-byte int) and returns the offset after it.
func putHost(b []byte, off int, ap netip.AddrPort) int {
	a := ap.Addr()
	if isV6(ap) {
		a16 := a.As16()
		copy(b[off:], a16[:])
		off += 16
	} else {
		var a4 [4]byte
		if a.IsValid() {
			a4 = a.Unmap().As4()
		}
		copy(b[off:], a4[:])
		off += 4
	}
	binary.BigEndian.PutUint32(b[off:], uint32(ap.Port()))
	return off + 4
}

// Seal sets the queue offset, physical offset and store timestamp of rec,
// a whole record from EncodeUnsealed (or Encode), and writes its
// whole-record CRC. It does not allocate.
func Seal(rec []byte, queueOffset, physOffset, storeTimestamp int64) {
	be := binary.BigEndian
	be.PutUint64(rec[OffQueueOffset:], uint64(queueOffset))
	be.PutUint64(rec[OffPhysOffset:], uint64(physOffset))
	sf := int32(be.Uint32(rec[OffSysFlag:]))
	be.PutUint64(rec[StoreTimeOffset(sf):], uint64(storeTimestamp))
	n := len(rec)
	putCRCDigits(rec[n-CRCReservedLen+len(crcPairStart):], RecordCRC(rec[:n-CRCReservedLen]))
}

// putCRCDigits writes crc as ten decimal digits, least significant first
// (RocketMQ's MessageDecoder.createCrc32).
func putCRCDigits(d []byte, crc uint32) {
	for i := 0; i < 10; i++ {
		d[i] = '0' + byte(crc%10)
		crc /= 10
	}
}

// BodyCRC is RocketMQ's body CRC: CRC32 (IEEE) & 0x7fffffff.
func BodyCRC(body []byte) uint32 { return crc32.ChecksumIEEE(body) & 0x7fffffff }

// RecordCRC is the whole-record CRC of the bytes it covers (a record's
// first TOTALSIZE-CRCReservedLen bytes): CRC32 (IEEE) & 0x7fffffff.
func RecordCRC(b []byte) uint32 { return crc32.ChecksumIEEE(b) & 0x7fffffff }

// PutBlank writes a blank record declaring size bytes (the rest of the
// segment) into dst[:BlankSize].
func PutBlank(dst []byte, size int32) {
	binary.BigEndian.PutUint32(dst[OffTotalSize:], uint32(size))
	binary.BigEndian.PutUint32(dst[OffMagic:], uint32(magicBlank))
}
