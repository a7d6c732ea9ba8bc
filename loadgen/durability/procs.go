package durability

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

	"github.com/samsamq/samsa/internal/freeport"
)

// proc is one child process: a name server or one broker incarnation.
// Its exited channel closes when the process has been reaped; err is the
// Wait error then.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	err    error
}

// startProc runs binary with args, output appended to logPath, and a
// goroutine that reaps it. The child gets SIGKILL if this process dies.
func startProc(name, binary, logPath string, args []string) (*proc, error) {
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
	p := &proc{name: name, cmd: cmd, log: f, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		// The child's output log, for diagnosis only: the child wrote
		// through its own descriptor, this one only the header above.
		_ = f.Close()
		close(p.exited)
	}()
	return p, nil
}

// alive reports whether the process has not exited yet.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits (up to timeout) until the process is reaped.
func (p *proc) kill(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	return p.wait(timeout)
}

// pause stops the process (SIGSTOP); resume continues it (SIGCONT).
func (p *proc) pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *proc) resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// term sends SIGTERM and waits up to timeout for a clean exit; a process
// still there then is killed and the timeout reported.
func (p *proc) term(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(timeout); err != nil {
		_ = p.kill(timeout)
		return err
	}
	if p.err != nil {
		return fmt.Errorf("%s: exit after SIGTERM: %w", p.name, p.err)
	}
	return nil
}

func (p *proc) wait(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
		return fmt.Errorf("%s (pid %d) still running %v after the signal", p.name, p.cmd.Process.Pid, timeout)
	}
}

// waitListening dials addr until it accepts, p exits, or timeout passes.
func waitListening(p *proc, addr string, timeout time.Duration) error {
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

// cluster is a name server and a broker of one run, on loopback; with
// Options.Role, the broker is a master and a slave follows it.
type cluster struct {
	opts        *Options
	dir         string // the run's dir: store/, namesrv.log, broker.log (and slave-store/, slave.log)
	namesrvAddr string
	brokerPort  int
	haPort      int // the broker's haListenPort (the master's in replication runs)
	slavePort   int // the slave's listenPort (replication runs)
	namesrv     *proc
	broker      *proc
	slave       *proc // nil unless Options.Role is set
	starts      int   // broker incarnations started
}

// newCluster makes the run's dir and picks the ports.
func newCluster(o *Options) (*cluster, error) {
	parent := o.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(parent); err == nil {
		parent = abs
	}
	kind := "durability-"
	if o.Role != "" {
		kind = "replication-" + strings.ToLower(o.Role) + "-"
	}
	dir, err := os.MkdirTemp(parent, kind+o.Backend+"-"+o.Flush+"-")
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Get(4)
	if err != nil {
		return nil, err
	}
	return &cluster{opts: o, dir: dir, namesrvAddr: "127.0.0.1:" + strconv.Itoa(ports[0]), brokerPort: ports[1],
		haPort: ports[2], slavePort: ports[3]}, nil
}

func (c *cluster) brokerAddr() string { return "127.0.0.1:" + strconv.Itoa(c.brokerPort) }

func (c *cluster) slaveAddr() string { return "127.0.0.1:" + strconv.Itoa(c.slavePort) }

// startNamesrv starts the name server and waits until it listens.
func (c *cluster) startNamesrv() error {
	p, err := startProc("namesrv", c.opts.Binary, filepath.Join(c.dir, "namesrv.log"),
		[]string{"namesrv", "-listen", c.namesrvAddr, "-log-level", "warn"})
	if err != nil {
		return err
	}
	c.namesrv = p
	return waitListening(p, c.namesrvAddr, c.opts.StartTimeout)
}

// brokerArgs is the broker's command line for the run's configuration:
// the master's when Options.Role is set (haListenPort fixed, so the
// slave's static haMasterAddress finds every incarnation).
func (c *cluster) brokerArgs() []string {
	// haListenPort is always the picked port: by default it is listenPort+1,
	// which nothing reserved, and the broker failed to start when another
	// process's connection held it ("replication listener: bind: address
	// already in use").
	args := append(c.commonArgs("store", c.brokerPort), "-D", "haListenPort="+strconv.Itoa(c.haPort))
	if role := c.opts.Role; role != "" {
		args = append(args, "-D", "brokerRole="+role)
	}
	return append(args, c.propArgs()...)
}

// slaveArgs is the slave's command line: brokerId 1 of the same broker
// name, its own store and port, following the master's HA port, copying
// the master's topics every second (the check reads the topic there).
func (c *cluster) slaveArgs() []string {
	args := c.commonArgs("slave-store", c.slavePort)
	args = append(args, "-D", "brokerRole=SLAVE", "-D", "brokerId=1",
		"-D", "haMasterAddress=127.0.0.1:"+strconv.Itoa(c.haPort), "-D", "slaveSyncInterval=1000")
	return append(args, c.propArgs()...)
}

// commonArgs are the flags a run's master and slave share.
func (c *cluster) commonArgs(store string, port int) []string {
	o := c.opts
	return []string{"broker", "-n", c.namesrvAddr, "-dir", filepath.Join(c.dir, store),
		"-listen", "127.0.0.1", "-port", strconv.Itoa(port), "-admin", "off",
		"-flush", o.Flush, "-backend", o.Backend, "-log-level", "info",
		"-D", "mappedFileSizeCommitLog=" + strconv.FormatInt(o.SegmentSize, 10),
		"-D", "brokerName=" + brokerName}
}

// propArgs are the -D flags of AckBuffered and Props.
func (c *cluster) propArgs() []string {
	var args []string
	if c.opts.AckBuffered {
		args = append(args, "-D", "transientStorePoolEnable=true")
	}
	for _, kv := range c.opts.Props {
		args = append(args, "-D", kv)
	}
	return args
}

// startBroker starts a broker incarnation; it does not wait for it.
func (c *cluster) startBroker() error {
	p, err := startProc("broker", c.opts.Binary, filepath.Join(c.dir, "broker.log"), c.brokerArgs())
	if err != nil {
		return err
	}
	c.broker = p
	c.starts++
	return nil
}

// startSlave starts the slave; it does not wait for it.
func (c *cluster) startSlave() error {
	p, err := startProc("slave", c.opts.Binary, filepath.Join(c.dir, "slave.log"), c.slaveArgs())
	if err != nil {
		return err
	}
	c.slave = p
	return nil
}

// close kills whatever still runs.
func (c *cluster) close() {
	for _, p := range []*proc{c.slave, c.broker, c.namesrv} {
		if p != nil && p.alive() {
			_ = p.kill(c.opts.StopTimeout)
		}
	}
}

// logTail is the last n lines of one of the run's logs, for errors.
func (c *cluster) logTail(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
