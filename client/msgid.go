package client

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// idGen makes message ids (the UNIQ_KEY property) laid out as RocketMQ's
// MessageClientIDSetter does, so tools that read an id's parts work:
//
//	bytes  field
//	  4    the host's IPv4 address
//	  2    process id
//	  4    a per-producer random number (RocketMQ: the class loader's hash)
//	  4    milliseconds since the start of the current month
//	  2    a counter
//
// rendered as 32 upper-case hex digits. Safe for concurrent use.
type idGen struct {
	prefix  string // hex of the first 10 bytes
	counter atomic.Uint32
	now     func() time.Time

	mu struct {
		sync.Mutex
		monthStart, nextMonth int64 // unix ms
	}
}

func newIDGen(now func() time.Time) *idGen {
	var fixed [10]byte
	copy(fixed[:4], localIPv4())
	binary.BigEndian.PutUint16(fixed[4:], uint16(os.Getpid()))
	rand.Read(fixed[6:])
	return &idGen{prefix: strings.ToUpper(hex.EncodeToString(fixed[:])), now: now}
}

// next returns a new id.
func (g *idGen) next() string { return g.nextAt(g.now()) }

// nextAt returns a new id made at now.
func (g *idGen) nextAt(now time.Time) string {
	ms := now.UnixMilli()
	g.mu.Lock()
	if ms >= g.mu.nextMonth || ms < g.mu.monthStart-1000_000 {
		y, m, _ := now.Date()
		start := time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
		g.mu.monthStart, g.mu.nextMonth = start.UnixMilli(), start.AddDate(0, 1, 0).UnixMilli()
	}
	diff := ms - g.mu.monthStart
	g.mu.Unlock()
	if diff < 0 {
		diff = 0 // a clock step back across the month start
	}
	var tail [6]byte
	binary.BigEndian.PutUint32(tail[:4], uint32(diff))
	binary.BigEndian.PutUint16(tail[4:], uint16(g.counter.Add(1)-1))
	var b [32]byte
	copy(b[:20], g.prefix)
	hex.Encode(b[20:], tail[:])
	for i := 20; i < 32; i++ {
		if b[i] >= 'a' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b[:])
}

// localIPv4 returns the first non-loopback IPv4 address of the host, else
// 127.0.0.1.
func localIPv4() net.IP {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				if v4 := n.IP.To4(); v4 != nil {
					return v4
				}
			}
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}
