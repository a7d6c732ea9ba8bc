package bench

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ProcIO are the kernel's I/O counters for this process (/proc/self/io):
// a cross-check on the engine's own counters. SysCW counts write-family
// syscalls (pwrite, write; not io_uring_enter, not msync), WriteBytes
// the bytes the process caused to be sent to the block layer.
type ProcIO struct {
	WChar               int64 `json:"wchar"`
	SysCW               int64 `json:"syscw"`
	WriteBytes          int64 `json:"write_bytes"`
	CancelledWriteBytes int64 `json:"cancelled_write_bytes"`
}

// readProcIO reads path (normally /proc/self/io); ok is false where the
// kernel does not offer it.
func readProcIO(path string) (ProcIO, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ProcIO{}, false
	}
	return parseProcIO(b), true
}

func parseProcIO(b []byte) ProcIO {
	var p ProcIO
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "wchar":
			p.WChar = n
		case "syscw":
			p.SysCW = n
		case "write_bytes":
			p.WriteBytes = n
		case "cancelled_write_bytes":
			p.CancelledWriteBytes = n
		}
	}
	return p
}

// sub returns p - q, field by field.
func (p ProcIO) sub(q ProcIO) ProcIO {
	return ProcIO{WChar: p.WChar - q.WChar, SysCW: p.SysCW - q.SysCW,
		WriteBytes: p.WriteBytes - q.WriteBytes, CancelledWriteBytes: p.CancelledWriteBytes - q.CancelledWriteBytes}
}
