package record

import (
	"encoding/binary"
	"fmt"
)

// Verify checks that b is exactly one intact record of this package lying
// at phys (NoPhys: not checked), the check a read makes before it hands a
// record out: TOTALSIZE equals len(b) (the size the caller's index gave),
// the magic code is MagicMessage, PHYSICALOFFSET is phys, and the trailing
// CRC property matches the whole-record CRC.
//
// It is Validate less what the whole-record CRC already proves: that CRC
// covers every byte but its own 20 (the body and BODYCRC included), and
// the encoder wrote well-formed lengths, so a record whose CRC matches is
// the record as sealed. Verify therefore makes one CRC pass, not two, and
// does not walk the variable-length fields. A record without the CRC
// property (stored by another broker) fails with ErrNoCRC: Verify never
// passes a record it could not check. It does not allocate on success.
func Verify(b []byte, phys int64) error {
	if len(b) < MinSize {
		return fmt.Errorf("%w: %d bytes, minimum %d", ErrBadSize, len(b), MinSize)
	}
	size, magic, _ := Header(b) // len(b) >= MinSize > BlankSize
	switch {
	case magic == MagicBlank:
		return fmt.Errorf("%w where a record of %d bytes should be", ErrBlank, len(b))
	case magic != MagicMessage:
		return fmt.Errorf("%w: %#08x", ErrBadMagic, uint32(magic))
	case int(size) != len(b):
		return fmt.Errorf("%w: TOTALSIZE says %d, the index %d", ErrBadSize, size, len(b))
	}
	if phys != NoPhys {
		if p := int64(binary.BigEndian.Uint64(b[OffPhysOffset:])); p != phys {
			return fmt.Errorf("%w: field says %d, record lies at %d", ErrPhysOffset, p, phys)
		}
	}
	n := len(b) - CRCReservedLen
	want, ok := crcTrailer(b[n:])
	if !ok {
		return ErrNoCRC
	}
	if c := RecordCRC(b[:n]); c != want {
		return fmt.Errorf("%w: stored %d, computed %d", ErrRecordCRC, want, c)
	}
	return nil
}

// crcTrailer parses the 20-byte CRC property t ("__CRC32#" 0x01, ten
// digits least significant first, 0x02).
func crcTrailer(t []byte) (uint32, bool) {
	if string(t[:len(crcPairStart)]) != string(crcPairStart) || t[CRCReservedLen-1] != PropertySeparator {
		return 0, false
	}
	var v uint64
	for i := len(crcPairStart) + 9; i >= len(crcPairStart); i-- {
		c := t[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return uint32(v), v <= 0x7fffffff
}
