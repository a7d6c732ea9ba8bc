package linkdelay

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxBands is the prio qdisc's band count (the kernel's most): bands 1–3
// carry the namespace's undelayed traffic by the default priomap, each
// DelayPorts call takes one of bands 4–16 for its netem child.
const maxBands = 16

// netemLimit is each netem child's queue in packets (its default, 1000,
// drops a fast stream's packets at a 2 ms delay).
const netemLimit = 100000

// DelayPorts makes TCP segments to or from any of ports on the
// namespace's loopback wait delay in netem before delivery. Every segment
// of a connection on such a port matches once (as destination port one
// way, as source port back), so the connection's round trip grows by
// 2×delay and every other port is left at loopback speed.
//
// Layout on the namespace's lo: a root prio qdisc (1:) whose bands 1–3
// take unfiltered traffic as usual; the call's band 1:N gets a netem
// child with the delay, and u32 filters send IPv4 and IPv6 TCP with a
// matching sport or dport there. Up to 13 calls, each its own delay; a
// port may be delayed once. On error the namespace's delays are
// undefined: Close it.
func (ns *Namespace) DelayPorts(delay time.Duration, ports ...int) error {
	if delay < time.Microsecond {
		return fmt.Errorf("linkdelay: delay %v: netem takes whole microseconds > 0", delay)
	}
	if len(ports) == 0 {
		return errors.New("linkdelay: DelayPorts without ports")
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.mu.closed {
		return fmt.Errorf("linkdelay: namespace %s is closed", ns.name)
	}
	us := fmt.Sprintf("%dus", delay.Microseconds())
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			return fmt.Errorf("linkdelay: port %d", p)
		}
		if d, ok := ns.mu.ports[p]; ok {
			return fmt.Errorf("linkdelay: port %d is already delayed by %s", p, d)
		}
	}
	if ns.mu.bands == 0 {
		if err := ns.run("tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "prio", "bands", strconv.Itoa(maxBands)); err != nil {
			return err
		}
		ns.mu.bands = 3
	}
	if ns.mu.bands == maxBands {
		return fmt.Errorf("linkdelay: namespace %s has %d delays already", ns.name, maxBands-3)
	}
	band := ns.mu.bands + 1
	flow := fmt.Sprintf("1:%x", band)
	if err := ns.run("tc", "qdisc", "add", "dev", "lo", "parent", flow, "handle", fmt.Sprintf("%x:", 0x10+band),
		"netem", "delay", us, "limit", strconv.Itoa(netemLimit)); err != nil {
		return err
	}
	ns.mu.bands = band
	for _, p := range ports {
		port := strconv.Itoa(p)
		for _, f := range [][]string{
			{"protocol", "ip", "prio", "1", "u32", "match", "ip", "protocol", "6", "0xff", "match", "ip", "dport", port, "0xffff"},
			{"protocol", "ip", "prio", "1", "u32", "match", "ip", "protocol", "6", "0xff", "match", "ip", "sport", port, "0xffff"},
			{"protocol", "ipv6", "prio", "2", "u32", "match", "ip6", "protocol", "6", "0xff", "match", "ip6", "dport", port, "0xffff"},
			{"protocol", "ipv6", "prio", "2", "u32", "match", "ip6", "protocol", "6", "0xff", "match", "ip6", "sport", port, "0xffff"},
		} {
			args := append([]string{"tc", "filter", "add", "dev", "lo", "parent", "1:"}, f...)
			if err := ns.run(append(args, "flowid", flow)...); err != nil {
				return err
			}
		}
		ns.mu.ports[p] = us
	}
	return nil
}

// delayedPackets is how many packets the namespace's netem children have
// sent (all of them, summed).
func (ns *Namespace) delayedPackets() (int64, error) {
	out, err := ipCmd("netns", "exec", ns.name, "tc", "-s", "qdisc", "show", "dev", "lo")
	if err != nil {
		return 0, err
	}
	return netemPackets(out)
}

// netemPackets sums the "Sent … pkt" counters of the netem qdiscs in
// `tc -s qdisc show` output.
func netemPackets(out string) (int64, error) {
	var sum int64
	inNetem := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "qdisc":
			inNetem = f[1] == "netem"
		case inNetem && len(f) >= 5 && f[0] == "Sent" && f[4] == "pkt":
			n, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("linkdelay: tc statistics line %q: %w", sc.Text(), err)
			}
			sum += n
			inNetem = false
		}
	}
	return sum, nil
}

// Available says whether this machine can delay ports with netem: Linux,
// root or CAP_NET_ADMIN with CAP_SYS_ADMIN, ip and tc on the path, and a
// throwaway namespace that takes the whole qdisc layout (the kernel may
// lack sch_prio, sch_netem or cls_u32). When it cannot, reason says what
// is missing. The probe runs once per process.
func Available() (ok bool, reason string) {
	r := probeNetem()
	return r == "", r
}

var probeNetem = sync.OnceValue(func() string {
	if reason := namespacesUnavailable(); reason != "" {
		return reason
	}
	if _, err := exec.LookPath("tc"); err != nil {
		return "tc (iproute2) is not on the path"
	}
	ns, err := NewNamespace("")
	if err != nil {
		return err.Error()
	}
	err = ns.DelayPorts(time.Millisecond, 9)
	if err = errors.Join(err, ns.Close()); err != nil {
		hint := ""
		if strings.Contains(err.Error(), "kind is unknown") {
			hint = " (a kernel without sch_prio or sch_netem: modprobe them, or use the proxy)"
		}
		return "the netem layout does not load: " + err.Error() + hint
	}
	return ""
})

// namespacesUnavailable says why this process cannot make network
// namespaces, or "" when it can.
func namespacesUnavailable() string {
	if runtime.GOOS != "linux" {
		return "network namespaces need Linux, not " + runtime.GOOS
	}
	if os.Geteuid() != 0 {
		caps, err := effectiveCaps()
		if err != nil {
			return "not root, and the capabilities are unknown: " + err.Error()
		}
		const netAdmin, sysAdmin = 12, 21
		if caps&(1<<netAdmin) == 0 || caps&(1<<sysAdmin) == 0 {
			return "not root, and without CAP_NET_ADMIN and CAP_SYS_ADMIN"
		}
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "ip (iproute2) is not on the path"
	}
	return ""
}

// effectiveCaps is this process's effective capability set.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}
