package storage

import (
	"fmt"
	"time"

	"github.com/samsamq/samsa/storage/backend"
)

// Durability names what an acknowledged append survives. Every (backend,
// flush policy, AckBuffered) triple has one level, stated in the broker's
// startup log, in every lab result and beside every PERFORMANCE.md figure.
//
//	level          acknowledged when ...                       process crash       power loss
//	power-loss     fsynced (FlushSync, group commit)           loses nothing       loses nothing
//	process-crash  in the kernel: page cache, or the device    loses nothing       loses what was not yet
//	               for O_DIRECT (the default for async, none)                      synced (Flush.Interval,
//	                                                                               FullInterval; none: OS)
//	memory         in the backend's user-space write buffer    loses what was not  as process-crash
//	               (AckBuffered with pwrite, odirect, uring)   yet written out
//
// Process-crash safety is what RocketMQ's and Kafka's async modes and NATS
// JetStream's default give: the bytes reach the kernel before the answer.
// The memory level is RocketMQ's transientStorePoolEnable: faster for a
// lone writer on O_DIRECT backends, and an explicit choice.
//
// Visibility follows the same line: at the process-crash and power-loss
// levels a record is indexed (and so served to consumers) only once it is
// in the kernel, so no consumer sees a record that a process crash then
// takes back, and queue offsets never go backwards across a process crash.
type Durability int

const (
	// DurabilityMemory: acknowledged from the process's own write buffer.
	DurabilityMemory Durability = iota + 1
	// DurabilityProcessCrash: acknowledged once in the kernel.
	DurabilityProcessCrash
	// DurabilityPowerLoss: acknowledged once fsynced.
	DurabilityPowerLoss
)

var durabilityNames = [...]string{
	DurabilityMemory:       "memory",
	DurabilityProcessCrash: "process-crash",
	DurabilityPowerLoss:    "power-loss",
}

func (d Durability) String() string {
	if d <= 0 || int(d) >= len(durabilityNames) {
		return fmt.Sprintf("Durability(%d)", int(d))
	}
	return durabilityNames[d]
}

// Durability returns the level an acknowledged Append of a store opened
// with o reaches (call EnsureDefaults first).
func (o Options) Durability() Durability {
	switch {
	case o.Flush.Policy == FlushSync:
		return DurabilityPowerLoss
	case o.AckBuffered && !appendsReachKernel(o.backendBaseName()):
		return DurabilityMemory
	}
	return DurabilityProcessCrash
}

// DurabilityNote says in one line what survives a process crash and a
// power loss for a store opened with o, for logs and result files.
func (o Options) DurabilityNote() string {
	d := o.Durability()
	var proc, power string
	switch d {
	case DurabilityPowerLoss:
		proc, power = "nothing acknowledged lost", "nothing acknowledged lost"
	case DurabilityProcessCrash:
		proc = "nothing acknowledged lost"
	case DurabilityMemory:
		proc = "acknowledged records still in the write buffer lost"
	}
	if power == "" {
		switch o.Flush.Policy {
		case FlushAsync:
			power = fmt.Sprintf("up to %v of acknowledged records lost (flush every %v when %d pages are dirty)",
				o.Flush.FullInterval.Round(time.Millisecond), o.Flush.Interval, max(o.Flush.DirtyPages, 0))
		default:
			power = "whatever the OS had not written back lost"
		}
	}
	return fmt.Sprintf("durability=%s (%s %s, flush %s): process crash: %s; power loss: %s",
		d, o.backendBaseName(), ackName(o), o.Flush.Policy, proc, power)
}

func ackName(o Options) string {
	if o.AckBuffered {
		return "ack-buffered"
	}
	if o.Stages() {
		return "ack-in-kernel via a stage"
	}
	return "ack-in-kernel"
}

// appendsReachKernel says whether a backend's Append itself puts the bytes
// in the kernel (mmap: a copy into a shared mapping is a copy into the page
// cache), so that there is no user-space buffer to lose.
func appendsReachKernel(backendName string) bool { return backendName == "mmap" }

// segmentBackend is the backend segments are made with (nil if o names
// none that is registered).
func (o Options) segmentBackend() backend.Backend {
	if o.SegmentBackend != nil {
		return o.SegmentBackend
	}
	be, _ := backend.Get(o.Backend)
	return be
}

// backendBaseName is the backend's registered name.
func (o Options) backendBaseName() string {
	if o.SegmentBackend != nil {
		return o.SegmentBackend.Name()
	}
	return o.Backend
}
