package broker

import "golang.org/x/sys/unix"

// diskUsage is the used and usable bytes of the file system holding dir.
func diskUsage(dir string) (used, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	// As df: reserved blocks not available to us count in neither
	// (storage/vfs's DiskUsage has the same arithmetic).
	bs := int64(st.Bsize)
	used = int64(st.Blocks-st.Bfree) * bs
	return used, used + int64(st.Bavail)*bs, nil
}
