package ctlrole

import "testing"

func TestNextHAEpoch(t *testing.T) {
	const s = HAEpochShift
	for _, c := range []struct {
		maxEver uint64
		ctl     int64
		want    uint64
		bad     bool
	}{
		{0, 1, 1 << s, false},           // a new broker
		{1 << s, 1, 1<<s | 1, false},    // the master restarted within its controller epoch
		{1<<s | 7, 1, 1<<s | 8, false},  // again
		{1<<s | 7, 2, 2 << s, false},    // elected at the next epoch
		{3 << s, 2, 0, true},            // the controller is behind the log
		{1<<s | (1<<s - 1), 1, 0, true}, // restarts within one epoch used up
		{0, 0, 0, true},                 // no controller epoch
		{180_000_000_000_000_000, 2_746_582_031_251, 2_746_582_031_251 << s, false}, // a clock epoch of the static roles; the group starts one above
	} {
		got, err := NextHAEpoch(c.maxEver, c.ctl)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("NextHAEpoch(%d, %d) = %d, %v; want %d (error %v)", c.maxEver, c.ctl, got, err, c.want, c.bad)
		}
		if err == nil && CtlEpochOf(got) != c.ctl {
			t.Errorf("CtlEpochOf(%d) = %d, want %d", got, CtlEpochOf(got), c.ctl)
		}
	}
}
