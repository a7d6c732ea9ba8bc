package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
)

// NoPhys tells Validate and Decode not to check the physical offset.
const NoPhys int64 = -1

// Record is a decoded message record. Body, Topic and Properties alias the
// decoded buffer.
type Record struct {
	TotalSize        int32
	BodyCRC          uint32
	QueueID          int32
	Flag             int32
	QueueOffset      int64
	PhysOffset       int64
	SysFlag          int32
	BornTimestamp    int64
	BornHost         netip.AddrPort
	StoreTimestamp   int64
	StoreHost        netip.AddrPort
	ReconsumeTimes   int32
	PreparedTxOffset int64
	Body             []byte
	Topic            []byte
	// Properties are the stored properties, the trailing CRC property
	// included (UserProperties leaves it out).
	Properties []byte
}

// UserProperties returns the properties without the trailing CRC property,
// or all of them when the record has none (a record stored by another
// RocketMQ broker, which does not write it).
func (r *Record) UserProperties() []byte {
	n := len(r.Properties) - CRCReservedLen
	if n < 0 || !bytes.HasPrefix(r.Properties[n:], crcPairStart) {
		return r.Properties
	}
	return r.Properties[:n]
}

// Fields returns the record's contents as encoder input (Topic copied to a
// string; Properties without the CRC property). Encode of the result
// reproduces the record byte for byte.
func (r *Record) Fields() Fields {
	return Fields{
		QueueID: r.QueueID, Flag: r.Flag, QueueOffset: r.QueueOffset, PhysOffset: r.PhysOffset,
		SysFlag: r.SysFlag, BornTimestamp: r.BornTimestamp, BornHost: r.BornHost,
		StoreTimestamp: r.StoreTimestamp, StoreHost: r.StoreHost, ReconsumeTimes: r.ReconsumeTimes,
		PreparedTxOffset: r.PreparedTxOffset, Topic: string(r.Topic), Body: r.Body,
		Properties: r.UserProperties(),
	}
}

// Header returns the TOTALSIZE and MAGICCODE at the start of b, or
// ErrTruncated if b is shorter than BlankSize.
func Header(b []byte) (size int32, magic int32, err error) {
	if len(b) < BlankSize {
		return 0, 0, fmt.Errorf("%w: %d bytes, need %d for a header", ErrTruncated, len(b), BlankSize)
	}
	return int32(binary.BigEndian.Uint32(b[OffTotalSize:])), int32(binary.BigEndian.Uint32(b[OffMagic:])), nil
}

// Validate checks the record at the start of b and returns its size: its
// bounds, magic code, internal lengths, physical offset (unless phys is
// NoPhys) and both CRCs. For a blank record it returns its declared size
// and ErrBlank. It reads only b[:size] and does not allocate on success.
func Validate(b []byte, phys int64) (int, error) {
	var r Record
	if err := decode(b, phys, &r, true); err != nil {
		if r.TotalSize > 0 && err == errBlank {
			return int(r.TotalSize), ErrBlank
		}
		return 0, err
	}
	return int(r.TotalSize), nil
}

// Decode validates the record at the start of b as Validate does and fills
// r. A blank record gives ErrBlank.
func Decode(b []byte, phys int64, r *Record) error {
	err := decode(b, phys, r, true)
	if err == errBlank {
		return fmt.Errorf("%w of %d bytes", ErrBlank, r.TotalSize)
	}
	return err
}

// DecodeUnchecked fills r from the record at the start of b checking only
// its structure (lengths, magic), not its CRCs or physical offset: for
// records already validated, e.g. read back through a consume queue entry.
func DecodeUnchecked(b []byte, r *Record) error {
	err := decode(b, NoPhys, r, false)
	if err == errBlank {
		return fmt.Errorf("%w of %d bytes", ErrBlank, r.TotalSize)
	}
	return err
}

// errBlank is decode's allocation-free answer for a blank record.
var errBlank = ErrBlank

func decode(b []byte, phys int64, r *Record, checkCRC bool) error {
	size, magic, err := Header(b)
	if err != nil {
		return err
	}
	switch magic {
	case MagicMessage:
	case MagicBlank:
		if size < BlankSize {
			return fmt.Errorf("%w: blank of %d bytes", ErrBadSize, size)
		}
		r.TotalSize = size
		return errBlank
	default:
		return fmt.Errorf("%w: %#08x", ErrBadMagic, uint32(magic))
	}
	if int(size) < MinSize {
		return fmt.Errorf("%w: %d bytes, minimum %d", ErrBadSize, size, MinSize)
	}
	if int(size) > len(b) {
		return fmt.Errorf("%w: record of %d bytes, %d available", ErrTruncated, size, len(b))
	}
	b = b[:size]
	be := binary.BigEndian
	r.TotalSize = size
	r.BodyCRC = be.Uint32(b[OffBodyCRC:])
	r.QueueID = int32(be.Uint32(b[OffQueueID:]))
	r.Flag = int32(be.Uint32(b[OffFlag:]))
	r.QueueOffset = int64(be.Uint64(b[OffQueueOffset:]))
	r.PhysOffset = int64(be.Uint64(b[OffPhysOffset:]))
	r.SysFlag = int32(be.Uint32(b[OffSysFlag:]))
	r.BornTimestamp = int64(be.Uint64(b[OffBornTime:]))
	if phys != NoPhys && r.PhysOffset != phys {
		return fmt.Errorf("%w: field says %d, record lies at %d", ErrPhysOffset, r.PhysOffset, phys)
	}
	// The fixed part with these hosts, up to and including the body length.
	fixedEnd := bodyLenOffset(r.SysFlag) + 4
	if fixedEnd+1+2 > int(size) {
		return fmt.Errorf("%w: %d bytes cannot hold the header", ErrBadSize, size)
	}
	p := OffBornHost
	r.BornHost, p = getHost(b, p, r.SysFlag&FlagBornHostV6 != 0)
	r.StoreTimestamp = int64(be.Uint64(b[p:]))
	r.StoreHost, p = getHost(b, p+8, r.SysFlag&FlagStoreHostV6 != 0)
	r.ReconsumeTimes = int32(be.Uint32(b[p:]))
	r.PreparedTxOffset = int64(be.Uint64(b[p+4:]))
	p += 12
	bodyLen := int(int32(be.Uint32(b[p:])))
	p += 4
	// Body, topic length byte, properties length: must fit.
	if bodyLen < 0 || bodyLen > int(size)-p-1-2 {
		return fmt.Errorf("%w: body length %d in a %d-byte record", ErrBadSize, bodyLen, size)
	}
	r.Body = b[p : p+bodyLen : p+bodyLen]
	p += bodyLen
	topicLen := int(int8(b[p]))
	p++
	if topicLen < 1 || topicLen > int(size)-p-2 {
		return fmt.Errorf("%w: topic length %d in a %d-byte record", ErrBadSize, topicLen, size)
	}
	r.Topic = b[p : p+topicLen : p+topicLen]
	p += topicLen
	propLen := int(int16(be.Uint16(b[p:])))
	p += 2
	if propLen < 0 || p+propLen != int(size) {
		return fmt.Errorf("%w: properties length %d ends at %d of a %d-byte record", ErrBadSize, propLen, p+propLen, size)
	}
	r.Properties = b[p:size:size]
	if !checkCRC {
		return nil
	}
	if c := BodyCRC(r.Body); c != r.BodyCRC {
		return fmt.Errorf("%w: stored %d, computed %d", ErrBodyCRC, r.BodyCRC, c)
	}
	want, ok := crcProperty(r.Properties)
	if !ok {
		return ErrNoCRC
	}
	if c := RecordCRC(b[:int(size)-CRCReservedLen]); c != want {
		return fmt.Errorf("%w: stored %d, computed %d", ErrRecordCRC, want, c)
	}
	return nil
}

func getHost(b []byte, off int, v6 bool) (netip.AddrPort, int) {
	var a netip.Addr
	if v6 {
		a = netip.AddrFrom16([16]byte(b[off : off+16]))
		off += 16
	} else {
		a = netip.AddrFrom4([4]byte(b[off : off+4]))
		off += 4
	}
	return netip.AddrPortFrom(a, uint16(binary.BigEndian.Uint32(b[off:]))), off + 4
}

// crcProperty parses the trailing CRC property of stored properties.
func crcProperty(props []byte) (uint32, bool) {
	if len(props) < CRCReservedLen {
		return 0, false
	}
	t := props[len(props)-CRCReservedLen:]
	if string(t[:len(crcPairStart)]) != string(crcPairStart) || t[CRCReservedLen-1] != PropertySeparator {
		return 0, false
	}
	if len(props) > CRCReservedLen && props[len(props)-CRCReservedLen-1] != PropertySeparator {
		return 0, false
	}
	d := t[len(crcPairStart) : len(crcPairStart)+10]
	var v uint64
	for i := 9; i >= 0; i-- {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > 0x7fffffff {
		return 0, false
	}
	return uint32(v), true
}

// Accessors for the fixed fields of an encoded record (b must hold at
// least the header: they do not validate).

// QueueOffsetOf returns a record's QUEUEOFFSET.
func QueueOffsetOf(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[OffQueueOffset:])) }

// PhysOffsetOf returns a record's PHYSICALOFFSET.
func PhysOffsetOf(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[OffPhysOffset:])) }

// SysFlagOf returns a record's SYSFLAG.
func SysFlagOf(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[OffSysFlag:])) }

// StoreTimestampOf returns a record's STORETIMESTAMP; b must hold the
// first StoreTimeOffset(SysFlagOf(b))+8 bytes.
func StoreTimestampOf(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b[StoreTimeOffset(SysFlagOf(b)):]))
}
