package backlog

import (
	"bytes"
	"os"
	"strconv"
)

// userHZ is the clock tick /proc/<pid>/stat counts CPU time in (USER_HZ,
// 100 on Linux whatever the kernel's HZ).
const userHZ = 100

// processCPU is this process's CPU time so far, user plus system, in
// seconds, from /proc/self/stat (0 where there is none).
func processCPU() float64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 { // state is field 3; utime and stime are 14 and 15
		return 0
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return float64(u+s) / userHZ
}
