package record

import (
	"fmt"
	"math"
)

// A hole is a record written over a damaged one by a repair that found
// valid records after it (storage repair.go): the damaged record's size,
// place, topic, queue and queue offset, a body of zeros and FlagHole in its
// SysFlag (a bit RocketMQ leaves unused). It keeps the log walkable and the
// queue offsets whole; the store indexes it with HoleTagsCode and no read
// ever delivers it.
const (
	// FlagHole marks a hole (ours).
	FlagHole int32 = 0x1 << 16
	// HoleTagsCode is a hole's ConsumeQueue tags code: no tag hashes to it
	// and no delay timestamp is it, so readers skip the entry unread.
	HoleTagsCode int64 = math.MinInt64
	// PropertyHole names the hole's reason ("damaged at repair: ...").
	PropertyHole = "SAMSA_HOLE"
)

// IsHole reports whether the record b (at least OffSysFlag+4 bytes) is a
// hole.
func IsHole(b []byte) bool {
	return len(b) >= OffSysFlag+4 && SysFlagOf(b)&FlagHole != 0
}

// EncodeHole encodes into dst (exactly size bytes) the hole that replaces
// a damaged record of size bytes at phys, holding its topic, queue, queue
// offset and transaction type (so it is indexed exactly when the damaged
// record was) and why as its reason. It fails when size cannot hold such
// a record.
func EncodeHole(dst []byte, phys int64, topic string, queueID int32, queueOffset int64, sysFlag int32, storeTime int64, why string) error {
	f := Fields{QueueID: queueID, QueueOffset: queueOffset, PhysOffset: phys,
		SysFlag: FlagHole | TransactionType(sysFlag), StoreTimestamp: storeTime, BornTimestamp: storeTime,
		Topic: topic, Properties: AppendProperty(nil, PropertyHole, why)}
	n, err := f.Size()
	if err != nil {
		return fmt.Errorf("record: hole at %d: %w", phys, err)
	}
	if n > len(dst) {
		f.Properties = nil // the reason is a courtesy
		if n, err = f.Size(); err != nil {
			return fmt.Errorf("record: hole at %d: %w", phys, err)
		}
	}
	if n > len(dst) {
		return fmt.Errorf("%w: a hole for %s/%d needs %d bytes, the damaged record had %d", ErrBadSize, topic, queueID, n, len(dst))
	}
	f.Body = make([]byte, len(dst)-n)
	m, err := Encode(dst, &f)
	if err != nil {
		return fmt.Errorf("record: hole at %d: %w", phys, err)
	}
	if m != len(dst) {
		return fmt.Errorf("record: internal: hole of %d bytes encoded as %d", len(dst), m)
	}
	return nil
}
