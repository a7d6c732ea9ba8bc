package ctlrole

import (
	"fmt"
	"math"
	"time"
)

// Replication epochs in controller mode. The controller's master epoch
// (+1 at every master change of the group) fences old masters; the epoch
// list of package ha marks which master wrote which part of the log, and
// must never reuse a number (a slave keeps the bytes below the end of the
// last epoch it shares with its master). The two differ in one case: a
// master that restarts before the controller saw it gone is master again
// under the same controller epoch, yet it may have lost an unflushed tail
// that a slave holds, so it must open a new ha epoch. So the ha epoch is
//
//	controller epoch << HAEpochShift | n
//
// where n counts the times a broker began mastership within that controller
// epoch (0 the first time). Order is kept: every ha epoch of a controller
// epoch is above every one of an earlier controller epoch, so the epoch
// lists stay ordered across fail-overs, and a broker registers with
// CtlEpochOf its highest ha epoch.
const HAEpochShift = 16

// CtlEpochOf is the controller epoch an ha epoch was opened under.
func CtlEpochOf(haEpoch uint64) int64 { return int64(haEpoch >> HAEpochShift) }

// NextHAEpoch is the ha epoch a broker made master at controller epoch ctl
// opens, given the highest ha epoch its file ever held.
func NextHAEpoch(maxEver uint64, ctl int64) (uint64, error) {
	if ctl < 1 || ctl > math.MaxInt64>>HAEpochShift {
		return 0, fmt.Errorf("broker: controller master epoch %d out of range", ctl)
	}
	base := uint64(ctl) << HAEpochShift
	switch {
	case maxEver < base:
		return base, nil
	case CtlEpochOf(maxEver) > ctl:
		return 0, fmt.Errorf("broker: made master at controller epoch %d, but this broker's log already holds epoch %d (controller epoch %d): "+
			"the controller is behind this broker (its state lost?); taking no writes", ctl, maxEver, CtlEpochOf(maxEver))
	case maxEver+1 > base|(1<<HAEpochShift-1):
		return 0, fmt.Errorf("broker: began mastership %d times within controller epoch %d; taking no writes until the controller raises it",
			1<<HAEpochShift, ctl)
	}
	return maxEver + 1, nil
}

// MayCutAcked: a replica may cut bytes its group acknowledged, whose
// lineage (the epoch of its log's tail) is given, to follow the master
// only when the controller made an unclean decision after that lineage
// (uncleanEpoch, controller.Result.UncleanEpoch); otherwise it refuses
// and keeps what may be the last copy (ha.SlaveConfig.MayCutAcked).
func MayCutAcked(lineage uint64, uncleanEpoch int64) bool {
	return CtlEpochOf(lineage) < uncleanEpoch
}

// HeartbeatWait is the wait before a broker's next heartbeat: every
// (brokerHeartbeatInterval), or, while waiting for word from the
// controller (a slave whose master may be gone, a broker with no role, a
// last heartbeat that failed), a fifteenth of timeout
// (controllerHeartBeatTimeoutMills), at least 50 ms: the answer is how it
// learns that it was elected, or whom to follow.
func HeartbeatWait(every, timeout time.Duration, waiting bool) time.Duration {
	if !waiting {
		return every
	}
	return min(every, max(timeout/15, 50*time.Millisecond))
}
