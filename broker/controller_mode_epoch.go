package broker

import (
	"fmt"
	"math"
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
//	controller epoch << haEpochShift | n
//
// where n counts the times a broker began mastership within that controller
// epoch (0 the first time). Order is kept: every ha epoch of a controller
// epoch is above every one of an earlier controller epoch, so the epoch
// lists stay ordered across fail-overs, and a broker registers with
// ctlEpochOf its highest ha epoch.
const haEpochShift = 16

// ctlEpochOf is the controller epoch an ha epoch was opened under.
func ctlEpochOf(haEpoch uint64) int64 { return int64(haEpoch >> haEpochShift) }

// nextHAEpoch is the ha epoch a broker made master at controller epoch ctl
// opens, given the highest ha epoch its file ever held.
func nextHAEpoch(maxEver uint64, ctl int64) (uint64, error) {
	if ctl < 1 || ctl > math.MaxInt64>>haEpochShift {
		return 0, fmt.Errorf("broker: controller master epoch %d out of range", ctl)
	}
	base := uint64(ctl) << haEpochShift
	switch {
	case maxEver < base:
		return base, nil
	case ctlEpochOf(maxEver) > ctl:
		return 0, fmt.Errorf("broker: made master at controller epoch %d, but this broker's log already holds epoch %d (controller epoch %d): "+
			"the controller is behind this broker (its state lost?); taking no writes", ctl, maxEver, ctlEpochOf(maxEver))
	case maxEver+1 > base|(1<<haEpochShift-1):
		return 0, fmt.Errorf("broker: began mastership %d times within controller epoch %d; taking no writes until the controller raises it",
			1<<haEpochShift, ctl)
	}
	return maxEver + 1, nil
}
