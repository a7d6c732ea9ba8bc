// Package peerproc runs a peer's server (redis-server, rabbitmq-server) as
// a child process for one loadgen run: found on PATH (or a clear error
// naming the package to install), started in its own process group with
// its output in a log file, stopped by signalling that group: first
// SIGTERM, then SIGKILL after a grace. Nothing else is touched.
//
// A Proc's methods may be called from one goroutine at a time; Stop is
// idempotent.
package peerproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// ErrNotInstalled is returned (wrapped) when the server's binary is not
// on PATH.
var ErrNotInstalled = errors.New("not installed")

// Find looks bin up on PATH and in the system's sbin directories; when it
// is missing the error says in one line how to install it.
func Find(bin, pkg string) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := dir + "/" + bin
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s %w: install it with `sudo apt-get install -y %s` (or make bench-peers)", bin, ErrNotInstalled, pkg)
}

// AddrInUse reports whether a start failed because a port was taken
// between freeport.Get and the server's bind (its log says so): worth
// another try on fresh ports.
func AddrInUse(err error) bool {
	if err == nil {
		return false
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "already in use") || strings.Contains(s, "already_used") || strings.Contains(s, "eaddrinuse")
}

// Proc is a running server.
type Proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error // the process's exit, once exited is closed
	stopped bool
}

// Start runs path with args in dir, env added to this process's, stdout
// and stderr appended to logPath.
func Start(path string, args, env []string, dir, logPath string) (*Proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close() // nothing written to it; the start's error is the one to report
		return nil, fmt.Errorf("peerproc: start %s: %w", path, err)
	}
	p := &Proc{name: path, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		// This process wrote nothing to the log: the child wrote through
		// its own descriptor.
		_ = log.Close()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed when the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Pid is the process's id, which is also its process group's (Setpgid).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// WaitReady calls ready every 100 ms until it returns nil, the process
// exits, or timeout passes; the error then carries the log's tail.
func (p *Proc) WaitReady(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = ready(); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("peerproc: %s exited before it was ready (%v): %s", p.name, p.err, p.LogTail(800))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("peerproc: %s not ready after %s (%v): %s", p.name, timeout, last, p.LogTail(800))
		}
	}
}

// LogTail is the last n bytes of the process's log, on one line.
func (p *Proc) LogTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// Stop sends SIGTERM to the process's group, and SIGKILL when it has not
// exited after grace; it returns once the process has exited (or 10 s
// after the SIGKILL, with an error).
func (p *Proc) Stop(grace time.Duration) error {
	if p.stopped {
		<-p.exited
		return nil
	}
	p.stopped = true
	pgid := p.cmd.Process.Pid // Setpgid: the group's id is the child's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // stragglers in the group
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return fmt.Errorf("peerproc: %s ignored SIGTERM for %s: killed", p.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("peerproc: %s (pid %d) did not exit after SIGKILL", p.name, pgid)
	}
}
