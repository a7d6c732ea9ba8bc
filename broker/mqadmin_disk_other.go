//go:build !linux

package broker

import "errors"

// diskUsage is not supported here: the runtime info leaves the disk
// figures out.
func diskUsage(string) (used, total int64, err error) {
	return 0, 0, errors.New("broker: disk usage is not supported on this system")
}
