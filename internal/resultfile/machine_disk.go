package resultfile

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// mount is one line of /proc/self/mountinfo.
type mount struct {
	dev     string // major:minor
	point   string
	options string
	fsType  string
	source  string
}

// parseMountinfo reads /proc/self/mountinfo: "id parent major:minor root
// mountpoint options [optional...] - fstype source superoptions".
func parseMountinfo(b []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 6 || sep < 0 || sep+2 >= len(f) {
			continue
		}
		out = append(out, mount{dev: f[2], point: unescapeMount(f[4]), options: f[5],
			fsType: f[sep+1], source: unescapeMount(f[sep+2])})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// findMount returns the mount holding dir: the longest mount point that is
// a path prefix of it, the last such line when one is mounted over another.
func findMount(ms []mount, dir string) (mount, bool) {
	best, found := mount{}, false
	for _, m := range ms {
		if !pathUnder(dir, m.point) {
			continue
		}
		if !found || len(m.point) >= len(best.point) {
			best, found = m, true
		}
	}
	return best, found
}

func pathUnder(p, root string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// disk is what /sys says about a block device.
type disk struct {
	name       string
	model      string
	rotational *bool
	writeCache string
	scheduler  string
}

// findDisk resolves a mount's device to its whole disk under sys:
// /sys/dev/block/<major:minor> (a partition's parent is the disk), or, for
// file systems with anonymous device numbers (btrfs, overlay), the mount
// source /dev/<name> through /sys/class/block/<name>.
func findDisk(sys string, m mount) disk {
	dir, err := filepath.EvalSymlinks(filepath.Join(sys, "dev", "block", m.dev))
	if err != nil && strings.HasPrefix(m.source, "/dev/") {
		dir, err = filepath.EvalSymlinks(filepath.Join(sys, "class", "block", filepath.Base(m.source)))
	}
	if err != nil {
		return disk{}
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir)
	}
	d := disk{name: filepath.Base(dir)}
	if s, ok := readTrim(filepath.Join(dir, "queue", "rotational")); ok {
		r := s == "1"
		d.rotational = &r
	}
	d.model = diskModel(dir)
	if s, ok := readTrim(filepath.Join(dir, "queue", "write_cache")); ok {
		d.writeCache = s
	} else if s, ok := readTrim(filepath.Join(dir, "cache_type")); ok {
		d.writeCache = s
	}
	if s, ok := readTrim(filepath.Join(dir, "queue", "scheduler")); ok {
		d.scheduler = s
		if i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']'); i >= 0 && j > i {
			d.scheduler = s[i+1 : j] // "none [mq-deadline] kyber" names the active one
		}
	}
	return d
}

// diskModel is device/model (SCSI, SATA, NVMe), else the driver's name and
// vendor id (virtio disks have no model), else "unknown".
func diskModel(dir string) string {
	dev := filepath.Join(dir, "device")
	if s, ok := readTrim(filepath.Join(dev, "model")); ok && s != "" {
		if v, ok := readTrim(filepath.Join(dev, "vendor")); ok && v != "" && !strings.HasPrefix(v, "0x") {
			return v + " " + s
		}
		return s
	}
	var parts []string
	if l, err := filepath.EvalSymlinks(filepath.Join(dev, "driver")); err == nil {
		parts = append(parts, filepath.Base(l))
	}
	if v, ok := readTrim(filepath.Join(dev, "vendor")); ok && v != "" {
		parts = append(parts, "vendor "+v)
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, ", ")
}

func readTrim(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.Join(strings.Fields(string(b)), " "), true
}
