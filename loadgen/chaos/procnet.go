package chaos

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// ownedBy returns a match for Partition.CutFrom that accepts a client
// connection when the process pid holds its socket: the connection's
// local end (the proxy's remote address, on 127.0.0.1) is looked up in
// /proc/net/tcp for its socket inode, and pid's descriptors in
// /proc/<pid>/fd for that socket. Linux only; a connection closed
// meanwhile matches nothing; on a lookup failure it accepts nothing and
// counts the failure in errs (the run reports it).
func ownedBy(pid int, errs *atomic.Int64) func(net.Addr) bool {
	return func(a net.Addr) bool {
		ta, ok := a.(*net.TCPAddr)
		if !ok {
			errs.Add(1)
			return false
		}
		inode, err := socketInode(ta)
		if err != nil {
			errs.Add(1)
			return false
		}
		if inode == "" {
			return false // closed meanwhile: nobody's to hold
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			errs.Add(1)
			return false
		}
		want := "socket:[" + inode + "]"
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && l == want {
				return true
			}
		}
		return false
	}
}

// socketInode is the inode of the IPv4 TCP socket whose local address is
// a, from /proc/net/tcp; "" if there is none (closed).
func socketInode(a *net.TCPAddr) (string, error) {
	ip := a.IP.To4()
	if ip == nil {
		return "", fmt.Errorf("%v: not IPv4", a)
	}
	// /proc/net/tcp writes the address as the 32-bit value in host
	// (little-endian) order, then the port, in hex.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 9 && fs[1] == local {
			return fs[9], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", nil // no such socket (any more)
}
