package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunDiskReadSmall(t *testing.T) {
	for _, m := range []string{ReadAuto, ReadFadvise} {
		t.Run(m, func(t *testing.T) {
			dir := t.TempDir()
			res, err := RunDiskRead(context.Background(), DiskReadOptions{Dir: dir, Block: 64 << 10, Size: 4 << 20, Method: m})
			require.NoError(t, err)
			require.EqualValues(t, 4<<20, res.Bytes)
			require.Positive(t, res.MBPerSec)
			require.Contains(t, []string{ReadODirect, ReadFadvise}, res.Method)
			if m == ReadFadvise {
				require.Equal(t, ReadFadvise, res.Method)
			}
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, ents, "the test file is removed")
		})
	}
}

func TestDiskReadOptionsValidate(t *testing.T) {
	o := DiskReadOptions{Block: 1000, Size: 10, Method: "mmap"}
	err := o.Validate()
	require.Error(t, err)
	for _, want := range []string{"dir is required", "multiple of 4096", "at least one block", `method "mmap"`} {
		require.Contains(t, err.Error(), want)
	}
}

// TestDropDirCache: a freshly written file is resident; after the drop
// (fdatasync + DONTNEED) next to none of it is.
func TestDropDirCache(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "commitlog")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(sub, "00000000000000000000"), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644))
	d, err := DropDirCache(dir)
	require.NoError(t, err)
	require.Equal(t, "fadvise", d.Method)
	require.Equal(t, 2, d.Files)
	require.EqualValues(t, 1<<20, d.Bytes)
	if d.ResidentBefore == 0 {
		t.Skip("this filesystem keeps no page cache (mincore sees nothing)")
	}
	require.Less(t, d.ResidentAfter, d.Bytes/4, "dropped: %+v", d)
}
