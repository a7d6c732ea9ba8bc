package linkdelay

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// helperEnv makes the test binary a helper process instead of running
// tests: the namespace tests start it inside a namespace with Command.
const helperEnv = "LINKDELAY_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// iface is what the "ifaces" helper reports of an interface.
type iface struct {
	Name string `json:"name"`
	Up   bool   `json:"up"`
}

// runHelper is the helper process. "ifaces" prints the interfaces it
// sees; "ping" runs Echo on $LINKDELAY_ADDR (unless $LINKDELAY_LISTEN is
// 0), pings it $LINKDELAY_N times and prints the round trips in ns.
func runHelper(mode string) error {
	switch mode {
	case "ifaces":
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		var out []iface
		for _, i := range ifs {
			out = append(out, iface{Name: i.Name, Up: i.Flags&net.FlagUp != 0})
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	case "ping":
		addr := os.Getenv("LINKDELAY_ADDR")
		n, err := strconv.Atoi(os.Getenv("LINKDELAY_N"))
		if err != nil {
			return err
		}
		if os.Getenv("LINKDELAY_LISTEN") != "0" {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			defer ln.Close()
			go Echo(ln)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rtts, err := Ping(ctx, addr, n)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(rtts)
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// helper runs the test binary as a helper through start (a Namespace's or
// a Link's Command) and decodes what it prints into out.
func helper(t *testing.T, start func(context.Context, string, ...string) *exec.Cmd, out any, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := start(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	require.NoError(t, err, "helper %v: %s", env, stderr.String())
	require.NoError(t, json.Unmarshal(b, out), "helper output %q", b)
}

// pingInside runs an echo on addr and n pings of it in one helper process.
func pingInside(t *testing.T, start func(context.Context, string, ...string) *exec.Cmd, addr string, n int) []time.Duration {
	t.Helper()
	var rtts []time.Duration
	helper(t, start, &rtts, helperEnv+"=ping", "LINKDELAY_ADDR="+addr, "LINKDELAY_N="+strconv.Itoa(n))
	require.Len(t, rtts, n)
	return rtts
}

func skipWithoutNamespaces(t *testing.T) {
	t.Helper()
	if reason := namespacesUnavailable(); reason != "" {
		t.Skip(reason)
	}
}

func requireListed(t *testing.T, name string, want bool) {
	t.Helper()
	names, err := listNamespaces()
	require.NoError(t, err)
	require.Equal(t, want, contains(names, name), "namespace %s listed: %v", name, names)
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// TestNamespaceLifecycle: a new namespace is listed, a process started
// with Command sees only its loopback (up) and can talk over it, and
// Close removes it (twice is fine).
func TestNamespaceLifecycle(t *testing.T) {
	skipWithoutNamespaces(t)
	ns, err := NewNamespace("")
	require.NoError(t, err)
	defer ns.Close()
	require.True(t, strings.HasPrefix(ns.Name(), fmt.Sprintf("%s%d-", Prefix, os.Getpid())), ns.Name())
	requireListed(t, ns.Name(), true)

	var ifs []iface
	helper(t, ns.Command, &ifs, helperEnv+"=ifaces")
	require.Equal(t, []iface{{Name: "lo", Up: true}}, ifs)
	pingInside(t, ns.Command, "127.0.0.1:40000", 20)

	require.NoError(t, ns.Close())
	requireListed(t, ns.Name(), false)
	require.NoError(t, ns.Close())
	require.Error(t, ns.DelayPorts(time.Millisecond, 40000), "delayed a port of a closed namespace")
}

// TestNewNamespaceAdoptsNothing: a name without the prefix, or one that
// exists, is refused, and the existing namespace survives the refusal.
func TestNewNamespaceAdoptsNothing(t *testing.T) {
	skipWithoutNamespaces(t)
	_, err := NewNamespace("lab-" + strconv.Itoa(os.Getpid()))
	require.Error(t, err)
	_, err = NewNamespace(Prefix + "a/../b")
	require.Error(t, err)
	ns, err := NewNamespace("")
	require.NoError(t, err)
	defer ns.Close()
	_, err = NewNamespace(ns.Name())
	require.Error(t, err)
	requireListed(t, ns.Name(), true)
}

// TestSweepRemovesOnlyStale: a namespace named for a pid that cannot run
// (above pid_max) goes; this process's and a live process's (pid 1) stay.
func TestSweepRemovesOnlyStale(t *testing.T) {
	skipWithoutNamespaces(t)
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	require.NoError(t, err)
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	suffix := "-t" + strconv.Itoa(os.Getpid()) // other test runs make their own
	stale, err := NewNamespace(Prefix + strconv.Itoa(pidMax+1) + suffix)
	require.NoError(t, err)
	defer stale.Close()
	live, err := NewNamespace(Prefix + "1" + suffix)
	require.NoError(t, err)
	defer live.Close()
	mine, err := NewNamespace("")
	require.NoError(t, err)
	defer mine.Close()

	removed, err := Sweep()
	require.NoError(t, err)
	require.NotContains(t, removed, live.Name())
	require.NotContains(t, removed, mine.Name())
	requireListed(t, stale.Name(), false) // this Sweep or a concurrent run's
	requireListed(t, live.Name(), true)
	requireListed(t, mine.Name(), true)
	require.Error(t, stale.Close(), "closing a namespace someone removed says so")
}

// TestNetemDelaysOnlyItsPort: with netem, pings on the delayed port take
// at least 2×delay each, and pings on another port never pass through the
// netem qdisc (its packet counter stays put).
func TestNetemDelaysOnlyItsPort(t *testing.T) {
	if ok, reason := Available(); !ok {
		t.Skip(reason)
	}
	const delay = 2 * time.Millisecond
	ns, err := NewNamespace("")
	require.NoError(t, err)
	defer ns.Close()
	require.NoError(t, ns.DelayPorts(delay, 40001))
	require.Error(t, ns.DelayPorts(time.Millisecond, 40001), "a port delayed twice")

	before, err := ns.delayedPackets()
	require.NoError(t, err)
	plain := pingInside(t, ns.Command, "127.0.0.1:40002", 50)
	afterPlain, err := ns.delayedPackets()
	require.NoError(t, err)
	require.Equal(t, before, afterPlain, "undelayed traffic went through netem")

	delayed := pingInside(t, ns.Command, "127.0.0.1:40001", 50)
	for i, rtt := range delayed {
		require.GreaterOrEqual(t, rtt, 2*delay, "ping %d on the delayed port", i)
	}
	afterDelayed, err := ns.delayedPackets()
	require.NoError(t, err)
	require.Greater(t, afterDelayed, afterPlain)
	t.Logf("median round trip: delayed port %v, other port %v", Median(delayed), Median(plain))

	require.NoError(t, ns.Close())
	requireListed(t, ns.Name(), false)
}

// TestOpenLink: each method gives a link whose DialAddr reaches the HA
// listener with at least 2×oneWay per round trip, from processes the
// link's Command starts.
func TestOpenLink(t *testing.T) {
	const oneWay = time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go Echo(ln)
	defer ln.Close()

	l, err := OpenLink(ProxyMethod, oneWay, ln.Addr().String())
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, "1ms one-way (proxy)", l.String())
	var rtts []time.Duration
	helper(t, l.Command, &rtts, helperEnv+"=ping", "LINKDELAY_ADDR="+l.DialAddr, "LINKDELAY_N=20", "LINKDELAY_LISTEN=0")
	require.Len(t, rtts, 20)
	for _, rtt := range rtts {
		require.GreaterOrEqual(t, rtt, 2*oneWay)
	}
	require.NoError(t, l.Close())

	_, err = OpenLink(ProxyMethod, oneWay, "10.1.2.3:4000")
	require.Error(t, err, "a link off loopback")
	_, err = OpenLink("tc", oneWay, ln.Addr().String())
	require.Error(t, err)

	if ok, reason := Available(); !ok {
		t.Logf("netem: %s", reason)
		return
	}
	n, err := OpenLink(Netem, oneWay, "127.0.0.1:40004")
	require.NoError(t, err)
	defer n.Close()
	for _, rtt := range pingInside(t, n.Command, n.DialAddr, 20) {
		require.GreaterOrEqual(t, rtt, 2*oneWay)
	}
	require.NoError(t, n.Close())
}

// TestNetemPacketsParse reads the netem counters out of tc's statistics.
func TestNetemPacketsParse(t *testing.T) {
	out := `qdisc prio 1: root refcnt 2 bands 16 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1
 Sent 9000 bytes 90 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc netem 14: parent 1:4 limit 100000 delay 2ms
 Sent 1884 bytes 28 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc netem 15: parent 1:5 limit 100000 delay 500us
 Sent 100 bytes 2 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
`
	n, err := netemPackets(out)
	require.NoError(t, err)
	require.Equal(t, int64(30), n)
}
