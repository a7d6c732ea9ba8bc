package resultfile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine is what a result file says about where it ran: enough to tell two
// machines (or two disks of one machine) apart and to know which commit ran.
type Machine struct {
	Hostname      string `json:"hostname"`
	Kernel        string `json:"kernel"`         // uname release
	KernelVersion string `json:"kernel_version"` // uname version
	Arch          string `json:"arch"`
	CPUModel      string `json:"cpu_model"`
	CPUs          int    `json:"cpus"` // processors in /proc/cpuinfo
	GOMAXPROCS    int    `json:"gomaxprocs"`
	MemBytes      int64  `json:"mem_bytes"`
	// Dir is the benchmark directory the disk facts are about, relative
	// to the working directory when under it (RelativePaths).
	Dir          string `json:"dir"`
	FSType       string `json:"fs_type"`            // from /proc/self/mountinfo
	FSMagic      string `json:"fs_magic,omitempty"` // statfs f_type, hex
	MountPoint   string `json:"mount_point"`
	MountOptions string `json:"mount_options"`
	// DeviceNumber is the dir's major:minor, Device the whole disk's name
	// under /sys/block (a partition resolves to its disk).
	DeviceNumber string `json:"device_number"`
	Device       string `json:"device"`
	DiskModel    string `json:"disk_model"`
	Rotational   *bool  `json:"rotational,omitempty"`
	WriteCache   string `json:"write_cache,omitempty"` // queue/write_cache or cache_type
	Scheduler    string `json:"scheduler,omitempty"`
	GitCommit    string `json:"git_commit"`
	GitDirty     bool   `json:"git_dirty"`
	GoVersion    string `json:"go_version"`
	// Notes lists facts that could not be read (and why).
	Notes []string `json:"notes,omitempty"`
}

// String is the one-line machine description printed under reports.
func (m Machine) String() string {
	rot := "rotational unknown"
	if m.Rotational != nil {
		rot = map[bool]string{true: "rotational", false: "non-rotational"}[*m.Rotational]
	}
	commit := m.GitCommit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if m.GitDirty {
		commit += "+dirty"
	}
	dev := m.Device
	if dev == "" {
		dev = "no block device"
	}
	gov := m.GoVersion
	if m.GOMAXPROCS > 0 && m.GOMAXPROCS != m.CPUs {
		gov += fmt.Sprintf(" (GOMAXPROCS %d)", m.GOMAXPROCS)
	}
	return fmt.Sprintf("%s: Linux %s %s, %s × %d, %.1f GiB RAM, %s on %s (%s, %s), %s, commit %s",
		m.Hostname, m.Kernel, m.Arch, m.CPUModel, m.CPUs, float64(m.MemBytes)/(1<<30),
		m.FSType, dev, m.DiskModel, rot, gov, commit)
}

// machineSource is where CollectMachine reads from; tests point it at fake
// /proc and /sys trees.
type machineSource struct {
	proc, sys string
	uname     func() (release, version, arch string, err error)
	hostname  func() (string, error)
	statfs    func(dir string) (int64, error)
	git       func() (commit string, dirty bool, err error)
}

// CollectMachine gathers the facts about this machine and the disk under
// dir. It never fails: what cannot be read is left empty and noted.
func CollectMachine(dir string) *Machine {
	m := collectMachine(dir, machineSource{
		proc: "/proc", sys: "/sys",
		uname: func() (string, string, string, error) {
			var u unix.Utsname
			if err := unix.Uname(&u); err != nil {
				return "", "", "", err
			}
			return unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Version[:]),
				unix.ByteSliceToString(u.Machine[:]), nil
		},
		hostname: os.Hostname,
		statfs: func(dir string) (int64, error) {
			var st unix.Statfs_t
			if err := unix.Statfs(dir, &st); err != nil {
				return 0, err
			}
			return int64(st.Type), nil
		},
		git: gitCommit,
	})
	return &m
}

func collectMachine(dir string, src machineSource) Machine {
	m := Machine{GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	note := func(format string, a ...any) { m.Notes = append(m.Notes, fmt.Sprintf(format, a...)) }
	var err error
	if m.Hostname, err = src.hostname(); err != nil {
		note("hostname: %v", err)
	}
	if m.Kernel, m.KernelVersion, m.Arch, err = src.uname(); err != nil {
		note("uname: %v", err)
		m.Arch = runtime.GOARCH
	}
	if b, err := os.ReadFile(filepath.Join(src.proc, "cpuinfo")); err != nil {
		note("cpuinfo: %v", err)
	} else {
		m.CPUModel, m.CPUs = parseCPUInfo(b)
	}
	if b, err := os.ReadFile(filepath.Join(src.proc, "meminfo")); err != nil {
		note("meminfo: %v", err)
	} else {
		m.MemBytes = parseMemTotal(b)
	}
	m.Dir = resolveDir(dir)
	if magic, err := src.statfs(m.Dir); err != nil {
		note("statfs: %v", err)
	} else {
		m.FSMagic = fmt.Sprintf("0x%x", magic)
	}
	if b, err := os.ReadFile(filepath.Join(src.proc, "self", "mountinfo")); err != nil {
		note("mountinfo: %v", err)
	} else if mnt, ok := findMount(parseMountinfo(b), m.Dir); !ok {
		note("mountinfo: no mount holds %s", m.Dir)
	} else {
		m.FSType, m.MountPoint, m.MountOptions, m.DeviceNumber = mnt.fsType, mnt.point, mnt.options, mnt.dev
		d := findDisk(src.sys, mnt)
		m.Device, m.DiskModel, m.Rotational, m.WriteCache, m.Scheduler = d.name, d.model, d.rotational, d.writeCache, d.scheduler
		if d.name == "" {
			note("block device: %s (%s) has none under %s", mnt.dev, mnt.source, src.sys)
			m.DiskModel = m.FSType + " (no block device)"
		}
	}
	m.Dir = RelativePaths(m.Dir) // read as absolute above; recorded as the result files name paths
	if src.git != nil {
		if m.GitCommit, m.GitDirty, err = src.git(); err != nil {
			note("git: %v", err)
		}
	}
	return m
}

// resolveDir makes dir absolute and, if it exists, free of symlinks.
func resolveDir(dir string) string {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// parseCPUInfo returns the first "model name" and the number of
// "processor" entries.
func parseCPUInfo(b []byte) (model string, n int) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			n++
		case "model name", "Model", "cpu model":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		}
	}
	return model, n
}

// parseMemTotal returns MemTotal in bytes (0 if absent).
func parseMemTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// gitCommit asks git about the working directory's checkout, falling back
// to the commit stamped into the binary.
func gitCommit() (string, bool, error) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err == nil {
		st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
		return strings.TrimSpace(string(out)), len(bytes.TrimSpace(st)) > 0, nil
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			return rev, dirty, nil
		}
	}
	return "", false, fmt.Errorf("no git checkout and no vcs build info: %v", err)
}
