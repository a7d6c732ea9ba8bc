// Package freeport picks TCP ports on 127.0.0.1 for servers that a test
// or a lab run starts as separate processes and must name in advance
// (peer lists, configuration files).
//
// A port picked by binding port 0 comes from the kernel's ephemeral range,
// the one every outgoing connection on the machine also draws its local
// port from, and two picks in a row may return the same port once the
// first listener is closed: with a busy machine (another test run beside
// this one) a server then finds its port taken. Get picks at random below
// the ephemeral range, where only servers bind, and holds each port until
// all n are picked, so they are distinct. A server can still lose its port
// to another process between Get and its own bind; callers that can retry
// on "address already in use" should.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// floor is the lowest port Get tries: above the registered services
// a test machine may run.
const floor = 20000

// tries bounds the random picks per port before Get falls back to the
// kernel's choice.
const tries = 64

// Get returns n distinct TCP ports that were free on 127.0.0.1 a moment
// ago.
func Get(n int) ([]int, error) {
	hi := ephemeralLow()
	held := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range held {
			_ = l.Close() // they only reserved the ports: nothing accepted
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := pick(hi)
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// One is Get(1).
func One() (int, error) {
	ps, err := Get(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// pick binds a random port in [floor, hi), or one the kernel chooses if
// tries random ones were taken.
func pick(hi int) (net.Listener, error) {
	if hi > floor {
		for range tries {
			port := floor + rand.IntN(hi-floor)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				return l, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("freeport: %w", err)
	}
	return l, nil
}

// ephemeralLow is the low end of the kernel's ephemeral port range
// (Linux's default 32768 where the file cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fs := strings.Fields(string(b))
	if len(fs) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(fs[0])
	if err != nil || lo <= 0 || lo > 65535 {
		return 32768
	}
	return lo
}
