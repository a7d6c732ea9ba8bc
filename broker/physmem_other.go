//go:build !linux

package broker

// physicalMemory is fallbackPhysicalMemory where sysinfo is not available.
func physicalMemory() int64 { return fallbackPhysicalMemory }
