package linkdelay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Prefix starts the name of every network namespace the lab makes; Sweep
// removes only names of the form Prefix<pid>-<anything>.
const Prefix = "samsa-lab-"

// ipTimeout bounds one ip or tc command.
const ipTimeout = 10 * time.Second

var (
	nsSeq     atomic.Uint64
	validName = regexp.MustCompile(`^` + Prefix + `[A-Za-z0-9_.-]+$`)
	sweepName = regexp.MustCompile(`^` + Prefix + `([0-9]+)-`)
)

// Namespace is a network namespace the lab made, with only its own
// loopback. Processes started with Command run inside it; DelayPorts
// slows chosen ports on its loopback. Nothing here touches the namespace
// this process runs in. Methods are safe for concurrent use.
type Namespace struct {
	name string
	mu   struct {
		sync.Mutex
		closed bool
		bands  int            // prio bands in use for delays (0: no qdisc yet)
		ports  map[int]string // delayed port → its netem delay, for errors
	}
}

// UniqueName is a namespace name no other process makes:
// samsa-lab-<pid>-<n>.
func UniqueName() string {
	return fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), nsSeq.Add(1))
}

// NewNamespace makes the network namespace name (empty: UniqueName()) and
// brings its loopback up. The name must start with Prefix, and must not
// exist yet: a namespace the lab did not make is never adopted. On error
// nothing is left behind.
func NewNamespace(name string) (*Namespace, error) {
	if name == "" {
		name = UniqueName()
	}
	if !validName.MatchString(name) || len(name) > 200 {
		return nil, fmt.Errorf("linkdelay: namespace name %q: want %s followed by letters, digits, '.', '_' or '-'", name, Prefix)
	}
	if _, err := ipCmd("netns", "add", name); err != nil {
		return nil, err
	}
	ns := &Namespace{name: name}
	ns.mu.ports = map[int]string{}
	if err := ns.run("ip", "link", "set", "dev", "lo", "up"); err != nil {
		return nil, errors.Join(err, ns.Close())
	}
	return ns, nil
}

// Name is the namespace's name (as `ip netns list` shows it).
func (ns *Namespace) Name() string { return ns.name }

// Command is exec.CommandContext for name and args run inside the
// namespace, through `ip netns exec` (which enters the namespace and
// execs name, so the process is name's own and ctx, Wait and signals
// reach it). Re-executing a binary this way is how a whole cluster gets
// into the namespace: Go's setns would move one OS thread, not the
// process. The child gets SIGKILL if this process dies.
func (ns *Namespace) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return killedWithParent(exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.name, name}, args...)...))
}

// killedWithParent makes cmd's process get SIGKILL when this one dies.
func killedWithParent(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Close removes the namespace with its qdiscs and filters. Processes
// still inside keep running (they are their starter's to stop) and are
// reported as an error, as is a namespace someone else removed. A second
// Close returns nil.
func (ns *Namespace) Close() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.mu.closed {
		return nil
	}
	ns.mu.closed = true
	pids, _ := ipCmd("netns", "pids", ns.name)
	_, err := ipCmd("netns", "delete", ns.name)
	if p := strings.Fields(pids); len(p) > 0 {
		err = errors.Join(err, fmt.Errorf("linkdelay: namespace %s removed with processes %v still inside", ns.name, p))
	}
	return err
}

// run runs an ip or tc command inside the namespace.
func (ns *Namespace) run(args ...string) error {
	if ns.name == "" {
		panic("linkdelay: a command without a namespace would change this process's own network")
	}
	_, err := ipCmd(append([]string{"netns", "exec", ns.name}, args...)...)
	return err
}

// Sweep removes the namespaces a killed run left: every samsa-lab-<pid>-*
// whose pid no longer runs. Namespaces of this process and of any live
// process are kept (a reused pid keeps a stale one until that process
// ends: the safe side). It returns the names it removed.
func Sweep() ([]string, error) {
	names, err := listNamespaces()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, name := range names {
		m := sweepName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() || pidAlive(pid) {
			continue
		}
		if _, err := ipCmd("netns", "delete", name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// listNamespaces is the names `ip netns list` shows.
func listNamespaces() ([]string, error) {
	out, err := ipCmd("netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0]) // "name (id: 3)"
		}
	}
	return names, nil
}

// pidAlive says whether a process pid exists (EPERM: it does, not ours).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ipCmd runs ip with args and returns its output; an error carries the
// command line and what it printed.
func ipCmd(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("linkdelay: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
