package resultfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DevStat is a block device's write counters (the kernel's
// Documentation/block/stat.rst fields 5 and 7): write requests completed
// and 512-byte sectors written, since boot.
type DevStat struct {
	WriteIOs     int64
	WriteSectors int64
}

// Sub returns d - e, field by field.
func (d DevStat) Sub(e DevStat) DevStat {
	return DevStat{WriteIOs: d.WriteIOs - e.WriteIOs, WriteSectors: d.WriteSectors - e.WriteSectors}
}

// DevStatSource reads the write counters of the block device that holds
// a directory: the device of the mount holding it (the partition itself
// when it is one, so another partition's I/O does not count), found as
// Machine's disk facts are. The counters are the whole device's: other
// processes' I/O to it counts too.
type DevStatSource struct {
	// Device is the device's name (vda, nvme0n1p2), Path its stat file.
	Device, Path string
}

// FindDevStat resolves dir to its device's stat file; the error says why
// it cannot (no mount, an anonymous device with no /dev source, no stat
// file), and the caller reports the figures as unknown.
func FindDevStat(dir string) (DevStatSource, error) {
	return findDevStat(dir, "/proc", "/sys")
}

func findDevStat(dir, proc, sys string) (DevStatSource, error) {
	d := resolveDir(dir)
	b, err := os.ReadFile(filepath.Join(proc, "self", "mountinfo"))
	if err != nil {
		return DevStatSource{}, fmt.Errorf("mountinfo: %w", err)
	}
	m, ok := findMount(parseMountinfo(b), d)
	if !ok {
		return DevStatSource{}, fmt.Errorf("no mount holds %s", d)
	}
	sd, err := filepath.EvalSymlinks(filepath.Join(sys, "dev", "block", m.dev))
	if err != nil && strings.HasPrefix(m.source, "/dev/") {
		sd, err = filepath.EvalSymlinks(filepath.Join(sys, "class", "block", filepath.Base(m.source)))
	}
	if err != nil {
		return DevStatSource{}, fmt.Errorf("%s (device %s, source %s) is no block device under %s", m.point, m.dev, m.source, sys)
	}
	src := DevStatSource{Device: filepath.Base(sd), Path: filepath.Join(sd, "stat")}
	if _, err := src.Read(); err != nil {
		return DevStatSource{}, err
	}
	return src, nil
}

// Read reads the counters now.
func (s DevStatSource) Read() (DevStat, error) {
	b, err := os.ReadFile(s.Path)
	if err != nil {
		return DevStat{}, err
	}
	return parseDevStat(b)
}

// parseDevStat reads a /sys/block/<dev>/stat line (the same fields as
// /proc/diskstats after the name).
func parseDevStat(b []byte) (DevStat, error) {
	f := strings.Fields(string(b))
	if len(f) < 7 {
		return DevStat{}, fmt.Errorf("block stat: %d fields, want at least 7", len(f))
	}
	ios, err1 := strconv.ParseInt(f[4], 10, 64)
	sec, err2 := strconv.ParseInt(f[6], 10, 64)
	if err1 != nil || err2 != nil {
		return DevStat{}, fmt.Errorf("block stat: %q: not numbers", string(b))
	}
	return DevStat{WriteIOs: ios, WriteSectors: sec}, nil
}
