package record

import "errors"

// Errors of Decode, Validate and the encoders. Decoding errors come wrapped
// with the details (offsets, sizes); match them with errors.Is. Every
// decoding error but ErrTruncated means the bytes are not a record written
// by this package; ErrTruncated means they may be, but more bytes are
// needed (a torn tail looks like either).
var (
	// ErrTruncated: the buffer ends before the record does.
	ErrTruncated = errors.New("record: truncated")
	// ErrBadMagic: the magic code is neither MagicMessage nor MagicBlank.
	ErrBadMagic = errors.New("record: bad magic code")
	// ErrBadSize: TOTALSIZE is out of bounds or disagrees with the
	// lengths inside the record.
	ErrBadSize = errors.New("record: bad size")
	// ErrPhysOffset: the PHYSICALOFFSET field is not where the record lies
	// (stale bytes of a recycled or preallocated file, or a misaligned read).
	ErrPhysOffset = errors.New("record: physical offset mismatch")
	// ErrBodyCRC: the body does not match BODYCRC.
	ErrBodyCRC = errors.New("record: body CRC mismatch")
	// ErrNoCRC: the record does not end with the PropertyCRC32 property.
	ErrNoCRC = errors.New("record: no whole-record CRC property")
	// ErrRecordCRC: the whole-record CRC does not match.
	ErrRecordCRC = errors.New("record: record CRC mismatch")
	// ErrBlank: Decode was given a blank record.
	ErrBlank = errors.New("record: blank record")

	// ErrTopic: the topic is empty or longer than MaxTopicLen.
	ErrTopic = errors.New("record: topic length out of [1, 127]")
	// ErrPropertiesTooLong: the properties with the CRC property exceed
	// MaxPropertiesLen.
	ErrPropertiesTooLong = errors.New("record: properties too long")
	// ErrBufferTooSmall: Encode was given a buffer shorter than Size.
	ErrBufferTooSmall = errors.New("record: buffer too small")
)
