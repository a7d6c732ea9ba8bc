package delay

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultLevels is RocketMQ's messageDelayLevel default.
const DefaultLevels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// ParseLevels reads a messageDelayLevel string (RocketMQ's
// ScheduleMessageService.parseDelayLevel): space-separated numbers with a
// unit s, m, h or d (ms too, ours, for tests); level i+1 waits out[i].
// There are 1 to MaxLevels levels.
func ParseLevels(s string) ([]time.Duration, error) {
	units := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		num, u, ok := f[:len(f)-1], units[f[len(f)-1]], true
		if strings.HasSuffix(f, "ms") { // ours, for tests: RocketMQ knows s, m, h, d
			num, u = f[:len(f)-2], time.Millisecond
		} else if u == 0 {
			ok = false
		}
		if !ok {
			return nil, fmt.Errorf("%q has no unit s, m, h or d", f)
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count of %s", f, f[len(f)-1:])
		}
		out = append(out, time.Duration(n)*u)
	}
	if len(out) == 0 || len(out) > MaxLevels {
		return nil, fmt.Errorf("%d levels, want 1..%d", len(out), MaxLevels)
	}
	return out, nil
}
