package ctlrole

import (
	"slices"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/ha"
)

// LogPosition is where a log ending at end stands for the controller's
// elections: End, and Epoch, the epoch of the last entry of the epoch list
// that holds data (an epoch begun at the end wrote nothing yet). The
// caller adds Confirmed (a master's), Damaged and Unverified.
func LogPosition(epochs []ha.Epoch, end int64) controller.Position {
	p := controller.Position{End: end}
	for _, e := range slices.Backward(epochs) {
		if e.Start < end {
			p.Epoch = e.Epoch
			break
		}
	}
	return p
}

// Confirmed is the offset the group acknowledged and every member of the
// sync-state set holds, as master self sees it: the lowest
// acknowledgement among the linked members, its handed offset when it is
// alone, and never above acknowledged (ha.Master.Acknowledged: the
// highest end its writes were released at). The controller elects no
// replica whose log ends below it, and the master raises its
// acknowledged mark to it: a member of the set that is not linked holds
// nothing this master can vouch for, so what it appended meanwhile was
// acknowledged to nobody and must not count (a deposed master that
// counted it would refuse to cut that tail and never follow again).
func Confirmed(self int64, handed, acknowledged int64, set []int64, slaves []ha.SlaveStatus) int64 {
	conf := min(handed, acknowledged)
	for _, s := range slaves {
		if s.BrokerID != self && slices.Contains(set, s.BrokerID) {
			conf = min(conf, s.AckOffset)
		}
	}
	return conf
}
