package resultfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTree writes files (path → content) under root; a content starting
// with "->" makes a symlink to the rest.
func fakeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if target, ok := strings.CutPrefix(c, "->"); ok {
			require.NoError(t, os.Symlink(target, full))
			continue
		}
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

const fakeMountinfo = `21 26 0:20 / /proc rw,relatime - proc proc rw
26 1 259:2 / / rw,relatime - ext4 /dev/nvme0n1p2 rw
40 26 8:17 / /mnt/my\040data rw,noatime shared:1 - xfs /dev/sdb1 rw,attr2
41 26 0:45 / /mnt/my\040data/sub rw - btrfs /dev/sdc rw
`

func fakeSource(t *testing.T) (machineSource, string) {
	root := t.TempDir()
	proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
	fakeTree(t, root, map[string]string{
		"proc/cpuinfo": "processor\t: 0\nmodel name\t: Fake CPU 9000\nflags\t: fpu\n\n" +
			"processor\t: 1\nmodel name\t: Fake CPU 9000\n\nprocessor\t: 2\nmodel name\t: Fake CPU 9000\n",
		"proc/meminfo":        "MemTotal:       16384000 kB\nMemFree:  1 kB\n",
		"proc/self/mountinfo": fakeMountinfo,
		// NVMe partition 259:2 → disk nvme0n1, non-rotational.
		"sys/devices/pci/nvme/nvme0n1/nvme0n1p2/partition": "2\n",
		"sys/devices/pci/nvme/nvme0n1/queue/rotational":    "0\n",
		"sys/devices/pci/nvme/nvme0n1/queue/write_cache":   "write back\n",
		"sys/devices/pci/nvme/nvme0n1/queue/scheduler":     "[none] mq-deadline\n",
		"sys/devices/pci/nvme/nvme0n1/device/model":        "Samsung SSD 980 PRO 1TB                 \n",
		"sys/dev/block/259:2":                              "->../../devices/pci/nvme/nvme0n1/nvme0n1p2",
		"sys/devices/pci/ata/sdb/sdb1/partition":           "1\n",
		"sys/devices/pci/ata/sdb/queue/rotational":         "1\n",
		"sys/devices/pci/ata/sdb/device/vendor":            "ATA     \n",
		"sys/devices/pci/ata/sdb/device/model":             "WDC WD40EFRX\n",
		"sys/dev/block/8:17":                               "->../../devices/pci/ata/sdb/sdb1",
		"sys/devices/virtio1/block/sdc/queue/rotational":   "1\n",
		"sys/devices/virtio1/block/sdc/device/vendor":      "0x1af4\n",
		"sys/devices/virtio1/block/sdc/device/driver":      "->../../../../../bus/virtio/drivers/virtio_blk",
		"sys/bus/virtio/drivers/virtio_blk/bind":           "",
		"sys/devices/virtio1/block/sdc/cache_type":         "write through\n",
		"sys/class/block/sdc":                              "->../../devices/virtio1/block/sdc",
	})
	return machineSource{
		proc: proc, sys: sys,
		uname:    func() (string, string, string, error) { return "6.1.0-test", "#1 SMP", "x86_64", nil },
		hostname: func() (string, error) { return "box", nil },
		statfs:   func(string) (int64, error) { return 0xef53, nil },
		git:      func() (string, bool, error) { return "0123456789abcdef0123", true, nil },
	}, root
}

func TestCollectMachineNVMePartition(t *testing.T) {
	src, _ := fakeSource(t)
	m := collectMachine("/var/lib/samsa", src)
	require.Empty(t, m.Notes)
	require.Equal(t, "box", m.Hostname)
	require.Equal(t, "6.1.0-test", m.Kernel)
	require.Equal(t, "Fake CPU 9000", m.CPUModel)
	require.Equal(t, 3, m.CPUs)
	require.Equal(t, int64(16384000*1024), m.MemBytes)
	require.Equal(t, "ext4", m.FSType)
	require.Equal(t, "0xef53", m.FSMagic)
	require.Equal(t, "/", m.MountPoint)
	require.Equal(t, "259:2", m.DeviceNumber)
	require.Equal(t, "nvme0n1", m.Device)
	require.Equal(t, "Samsung SSD 980 PRO 1TB", m.DiskModel)
	require.NotNil(t, m.Rotational)
	require.False(t, *m.Rotational)
	require.Equal(t, "write back", m.WriteCache)
	require.Equal(t, "none", m.Scheduler)
	require.Contains(t, m.String(), "ext4 on nvme0n1 (Samsung SSD 980 PRO 1TB, non-rotational)")
	require.Contains(t, m.String(), "commit 0123456789ab+dirty")
}

func TestCollectMachineEscapedMountAndHDD(t *testing.T) {
	src, _ := fakeSource(t)
	m := collectMachine("/mnt/my data/bench", src)
	require.Equal(t, "xfs", m.FSType)
	require.Equal(t, "/mnt/my data", m.MountPoint)
	require.Equal(t, "sdb", m.Device)
	require.Equal(t, "ATA WDC WD40EFRX", m.DiskModel)
	require.True(t, *m.Rotational)
}

func TestCollectMachineAnonymousDeviceFallsBackToSource(t *testing.T) {
	src, _ := fakeSource(t)
	m := collectMachine("/mnt/my data/sub/x", src)
	require.Equal(t, "btrfs", m.FSType)
	require.Equal(t, "0:45", m.DeviceNumber)
	require.Equal(t, "sdc", m.Device)
	require.Equal(t, "virtio_blk, vendor 0x1af4", m.DiskModel)
	require.Equal(t, "write through", m.WriteCache)
}

func TestCollectMachineNotesWhatIsMissing(t *testing.T) {
	src, root := fakeSource(t)
	require.NoError(t, os.Remove(filepath.Join(root, "proc", "cpuinfo")))
	src.git = func() (string, bool, error) { return "", false, errors.New("no git") }
	m := collectMachine("/proc/x", src) // proc has no block device
	require.Equal(t, "proc", m.FSType)
	require.Equal(t, "", m.Device)
	require.Equal(t, "proc (no block device)", m.DiskModel)
	require.Len(t, m.Notes, 3, "%v", m.Notes) // cpuinfo, block device, git
	require.Contains(t, m.String(), "no block device")
}

func TestCollectMachineReal(t *testing.T) {
	m := CollectMachine(t.TempDir())
	require.NotEmpty(t, m.Kernel)
	require.NotEmpty(t, m.FSType)
	require.Positive(t, m.CPUs)
	t.Log(m.String())
}
