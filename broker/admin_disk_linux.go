package broker

import "golang.org/x/sys/unix"

// diskUsage is the used and total bytes of the file system holding dir.
func diskUsage(dir string) (used, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bs := int64(st.Bsize)
	total = int64(st.Blocks) * bs
	return total - int64(st.Bfree)*bs, total, nil
}
