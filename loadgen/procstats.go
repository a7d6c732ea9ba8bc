package loadgen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ServerProcess names the processes that serve a driver's system, so a run
// can read their open files and resident memory from /proc (queue-count
// scaling: a file per queue shows up as open files, an index per queue as
// RSS).
type ServerProcess struct {
	// PGID is the server's process group (a peer started by peerproc
	// leads its own group); 0 with Self.
	PGID int `json:"pgid,omitempty"`
	// Self says the server runs inside this process (an embedded Samsa
	// cluster, the in-process nats-server): the figures then include the
	// loadgen's own clients, which Note says.
	Self bool   `json:"self,omitempty"`
	Note string `json:"note,omitempty"`
}

// ServerProcessDriver is a Driver that can name its server's processes.
type ServerProcessDriver interface {
	ServerProcess() (ServerProcess, bool)
}

// ServerStats is what /proc said about the server's processes at the end
// of the measured window.
type ServerStats struct {
	ServerProcess
	Processes int   `json:"processes"`
	OpenFiles int64 `json:"open_files"`
	RSSBytes  int64 `json:"rss_bytes"`
	// Error is why the figures could not be read (no /proc, the process
	// gone); the figures are then zero.
	Error string `json:"error,omitempty"`
}

// serverStats reads d's server's figures, nil when d cannot name its
// server (a live cluster elsewhere).
func serverStats(d Driver) *ServerStats {
	sd, ok := d.(ServerProcessDriver)
	if !ok {
		return nil
	}
	sp, ok := sd.ServerProcess()
	if !ok {
		return nil
	}
	st := ReadServerStats(sp)
	return &st
}

// ReadServerStats sums open files and RSS over sp's processes.
func ReadServerStats(sp ServerProcess) ServerStats {
	return readServerStats("/proc", sp)
}

func readServerStats(proc string, sp ServerProcess) ServerStats {
	st := ServerStats{ServerProcess: sp}
	var pids []string
	if sp.Self {
		pids = []string{strconv.Itoa(os.Getpid())}
	} else if sp.PGID > 0 {
		var err error
		if pids, err = groupPids(proc, sp.PGID); err != nil {
			st.Error = err.Error()
			return st
		}
	}
	if len(pids) == 0 {
		st.Error = fmt.Sprintf("no process in group %d", sp.PGID)
		return st
	}
	for _, pid := range pids {
		fds, err := os.ReadDir(filepath.Join(proc, pid, "fd"))
		if err != nil {
			continue // exited meanwhile, or not ours to read
		}
		rss, err := vmRSS(filepath.Join(proc, pid, "status"))
		if err != nil {
			continue
		}
		st.Processes++
		st.OpenFiles += int64(len(fds))
		st.RSSBytes += rss
	}
	if st.Processes == 0 {
		st.Error = fmt.Sprintf("could not read %s/<pid>/fd and status of %v", proc, pids)
	}
	return st
}

// groupPids lists the processes whose process group is pgid.
func groupPids(proc string, pgid int) ([]string, error) {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// vmRSS is the VmRSS line of a /proc/<pid>/status file, in bytes.
func vmRSS(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmRSS:") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 2 {
			break
		}
		kb, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: VmRSS %q: %w", path, fs[1], err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("%s: no VmRSS line", path)
}
