package killloop

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is one child process (a name server, a controller, one broker
// incarnation), reaped by a goroutine of its own. Its methods are safe
// for concurrent use.
type Proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	err    error         // the Wait error, set before exited closes
}

// StartProc runs binary with args, its output appended to logPath after a
// line naming the command. The child gets SIGKILL should this process die.
func StartProc(name, binary, logPath string, args []string) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), binary, strings.Join(args, " ")); err != nil {
		_ = f.Close() // the write's error is the one to report
		return nil, fmt.Errorf("%s: log %s: %w", name, logPath, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close() // the start's error is the one to report
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		// The child's output log, for diagnosis only: the child wrote
		// through its own descriptor, this one only the header above.
		_ = f.Close()
		close(p.exited)
	}()
	return p, nil
}

// Name is the name StartProc was given.
func (p *Proc) Name() string { return p.name }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has been reaped; Err is then its
// Wait error.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err waits until the process has been reaped and returns its Wait error.
func (p *Proc) Err() error {
	<-p.exited
	return p.err
}

// Alive reports whether the process has not exited yet.
func (p *Proc) Alive() bool { return !closed(p.exited) }

// Kill sends SIGKILL and waits (up to timeout) until the process is reaped.
func (p *Proc) Kill(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	return p.wait(timeout)
}

// Pause stops the process (SIGSTOP); Resume continues it (SIGCONT).
func (p *Proc) Pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *Proc) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// Term sends SIGTERM and waits up to timeout for a clean exit; a process
// still there then is killed and the timeout reported.
func (p *Proc) Term(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(timeout); err != nil {
		_ = p.Kill(timeout)
		return err
	}
	if p.err != nil {
		return fmt.Errorf("%s: exit after SIGTERM: %w", p.name, p.err)
	}
	return nil
}

func (p *Proc) wait(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
		return fmt.Errorf("%s (pid %d) still running %v after the signal", p.name, p.cmd.Process.Pid, timeout)
	}
}

// WaitListening dials addr until it accepts, the process exits, or
// timeout passes.
func (p *Proc) WaitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close() // a probe: nothing sent on it
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before listening on %s: %v", p.name, addr, p.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not listening on %s after %v", p.name, addr, timeout)
}

// Addr is the loopback address of port.
func Addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// RunDir makes a fresh directory for one run's data and logs under parent
// (made if missing; "" is the temp dir), named prefix and a random
// suffix, and returns its absolute path.
func RunDir(parent, prefix string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	if abs, err := filepath.Abs(parent); err == nil {
		parent = abs
	}
	return os.MkdirTemp(parent, prefix)
}

// Tail is the last n lines of the log at path.
func Tail(path string, n int) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n"), nil
}
