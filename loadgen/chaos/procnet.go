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

// procNetReads bounds how often socketInode reads /proc/net/tcp for one
// connection. The file is produced in chunks from a hash table that other
// processes change as it is read, so a read may skip a live socket; the
// connection being looked up is alive in the proxy, so a miss is read
// again before it is believed.
const procNetReads = 4

// ownedBy returns a match for Partition.CutFrom that accepts a client
// connection when the process pid holds its socket: the client's socket
// (local address the proxy connection's remote one, remote address its
// local one) is looked up in /proc/net/tcp for its inode, and pid's
// descriptors in /proc/<pid>/fd for that socket. Linux only; a connection
// closed meanwhile matches nothing; on a lookup failure it accepts nothing
// and counts the failure in errs (the run reports it).
func ownedBy(pid int, errs *atomic.Int64) func(net.Conn) bool {
	return func(c net.Conn) bool {
		client, ok1 := c.RemoteAddr().(*net.TCPAddr)
		proxy, ok2 := c.LocalAddr().(*net.TCPAddr)
		if !ok1 || !ok2 {
			errs.Add(1)
			return false
		}
		var inode string
		for range procNetReads {
			var err error
			if inode, err = socketInode(client, proxy); err != nil {
				errs.Add(1)
				return false
			}
			if inode != "" {
				break
			}
		}
		if inode == "" {
			return false // closed meanwhile: nobody's to hold
		}
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, err := os.ReadDir(dir)
		if err != nil {
			errs.Add(1)
			return false
		}
		want := "socket:[" + inode + "]"
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == want {
				return true
			}
		}
		return false
	}
}

// procAddr is a as /proc/net/tcp writes it: the 32-bit address in host
// (little-endian) order, then the port, in hex.
func procAddr(a *net.TCPAddr) (string, error) {
	ip := a.IP.To4()
	if ip == nil {
		return "", fmt.Errorf("%v: not IPv4", a)
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port), nil
}

// socketInode is the inode of the open IPv4 TCP socket from local to
// remote, from /proc/net/tcp; "" if there is none (closed, or skipped by
// this read). Sockets in TIME_WAIT, listed with inode 0, belong to nobody
// and are passed over: one may share the local address with a live one.
func socketInode(local, remote *net.TCPAddr) (string, error) {
	l, err := procAddr(local)
	if err != nil {
		return "", err
	}
	r, err := procAddr(remote)
	if err != nil {
		return "", err
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 9 && fs[1] == l && fs[2] == r && fs[9] != "0" {
			return fs[9], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", nil // no such socket (any more)
}
