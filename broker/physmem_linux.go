package broker

import "golang.org/x/sys/unix"

// physicalMemory is the machine's physical memory in bytes (sysinfo), or
// fallbackPhysicalMemory when the kernel does not say.
func physicalMemory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return fallbackPhysicalMemory
	}
	return int64(si.Totalram) * int64(max(si.Unit, 1))
}
