package resultfile

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFindDevStat resolves a directory to its partition's counters (not
// the whole disk's), falls back to the mount source for an anonymous
// device, and says why when there is no block device at all.
func TestFindDevStat(t *testing.T) {
	_, root := fakeSource(t)
	proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
	fakeTree(t, root, map[string]string{
		"sys/devices/pci/nvme/nvme0n1/nvme0n1p2/stat": "  1 2 3 4 100 6 2048 8 0 10 11 0 0 0 0 5 6\n",
		"sys/devices/pci/nvme/nvme0n1/stat":           "  1 2 3 4 999 6 99999 8 0 10 11\n",
		"sys/devices/virtio1/block/sdc/stat":          "0 0 0 0 7 0 56 0 0 0 0\n",
	})
	src, err := findDevStat("/home/x", proc, sys)
	require.NoError(t, err)
	require.Equal(t, "nvme0n1p2", src.Device)
	st, err := src.Read()
	require.NoError(t, err)
	require.Equal(t, DevStat{WriteIOs: 100, WriteSectors: 2048}, st)

	src, err = findDevStat("/mnt/my data/sub/d", proc, sys) // btrfs 0:45, source /dev/sdc
	require.NoError(t, err)
	require.Equal(t, "sdc", src.Device)

	_, err = findDevStat("/mnt/my data/d", proc, sys) // sdb1 has no stat file here
	require.Error(t, err)
	_, err = findDevStat("/proc/x", proc, sys) // proc: no block device
	require.ErrorContains(t, err, "no block device")

	require.Equal(t, DevStat{WriteIOs: 3, WriteSectors: 8}, DevStat{WriteIOs: 10, WriteSectors: 16}.Sub(DevStat{WriteIOs: 7, WriteSectors: 8}))
	_, err = parseDevStat([]byte("1 2 3"))
	require.Error(t, err)
}

// TestFindDevStatReal: on this machine, the working directory either
// resolves or says why not; never a made-up device.
func TestFindDevStatReal(t *testing.T) {
	src, err := FindDevStat(".")
	if err != nil {
		t.Logf("no device: %v", err)
		return
	}
	_, err = src.Read()
	require.NoError(t, err)
}
