package backlog

import (
	"bytes"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/google/pprof/profile"
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

// sideLabel is the pprof label a drain's goroutines carry: "broker" on
// those the target started (the embedded broker and name server, and
// everything they start), "client" on the steady producers' and the
// consumers'. The CPU profile taken over the drain splits the process's
// CPU by it (cpuSplit).
const sideLabel = "samsa_side"

// cpuSplit is a CPU profile over the drain, split by sideLabel.
type cpuSplit struct {
	buf     bytes.Buffer
	running bool
}

// startCPUSplit starts the process's CPU profile; a profile already
// running (samsa --profile cpu) leaves the split out (zero).
func startCPUSplit() *cpuSplit {
	c := &cpuSplit{}
	c.running = pprof.StartCPUProfile(&c.buf) == nil
	return c
}

// stop ends the profile and returns the CPU seconds sampled per side
// ("" for goroutines without the label: the runtime's own, such as the
// garbage collector's background workers).
func (c *cpuSplit) stop() map[string]float64 {
	if !c.running {
		return nil
	}
	pprof.StopCPUProfile()
	p, err := profile.Parse(&c.buf)
	if err != nil {
		return nil
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	out := map[string]float64{}
	for _, s := range p.Sample {
		side := ""
		if v := s.Label[sideLabel]; len(v) > 0 {
			side = v[0]
		}
		out[side] += float64(s.Value[idx]) / 1e9
	}
	return out
}
