package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// SlaveStatPrefix begins the name of every per-slave line of a master's
// text stats: slave:<addr>:<field>.
const SlaveStatPrefix = "slave:"

// The fields of a slave's lines, in the order Format writes them.
const (
	slaveAckOffset   = "ack_offset"
	slaveBehindBytes = "behind_bytes"
	slaveLagMs       = "lag_ms"
	slaveInSync      = "in_sync"
	slaveSinceMs     = "since_ms"
)

// SlaveStat is one slave as its master sees it, as the master's text stats
// (`stats` and `stats ha`) carry it, one line per field:
//
//	slave:<addr>:ack_offset    CommitLog offset the slave reported holding
//	slave:<addr>:behind_bytes  master's handed offset minus that
//	slave:<addr>:lag_ms        how long ago the master's log passed it
//	slave:<addr>:in_sync       1 when a SYNC_MASTER waits for it, else 0
//	slave:<addr>:since_ms      unix ms its in-sync state last changed (0: unknown)
//
// Addr usually holds colons (host:port, [::1]:10912): a name splits at its
// last colon, so the field name must not hold one.
type SlaveStat struct {
	// Addr is the slave's address; non-empty, without spaces or line
	// breaks (a STAT line's name ends at its first space).
	Addr        string
	AckOffset   int64
	BehindBytes int64
	LagMs       int64
	InSync      bool
	SinceMs     int64
}

// Format gives s's stats lines as name/value pairs, in the order above.
func (s SlaveStat) Format() []Stat {
	p := SlaveStatPrefix + s.Addr + ":"
	inSync := "0"
	if s.InSync {
		inSync = "1"
	}
	return []Stat{
		{Name: p + slaveAckOffset, Value: strconv.FormatInt(s.AckOffset, 10)},
		{Name: p + slaveBehindBytes, Value: strconv.FormatInt(s.BehindBytes, 10)},
		{Name: p + slaveLagMs, Value: strconv.FormatInt(s.LagMs, 10)},
		{Name: p + slaveInSync, Value: inSync},
		{Name: p + slaveSinceMs, Value: strconv.FormatInt(s.SinceMs, 10)},
	}
}

// ParseSlaveStats reads the slave:<addr>:<field> lines among stats (other
// names are skipped) into one SlaveStat per address, in the order the
// addresses first appear; nil when there is none. A field an address's
// lines leave out stays zero; a field this version does not know (a word
// of lower-case letters, digits and '_') is skipped, so a newer writer
// may add some. Anything else is an error naming the line: a name with
// no field or no address, a value that is no integer, an in_sync other
// than 0 or 1, a field given twice for one address (two slaves the lines
// cannot tell apart).
func ParseSlaveStats(stats []Stat) ([]SlaveStat, error) {
	var out []SlaveStat
	index := map[string]int{}
	seen := map[string]bool{} // name
	for _, st := range stats {
		rest, ok := strings.CutPrefix(st.Name, SlaveStatPrefix)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return nil, fmt.Errorf("protocol: slave stat %q: want slave:<addr>:<field>", st.Name)
		}
		addr, field := rest[:i], rest[i+1:]
		if addr == "" {
			return nil, fmt.Errorf("protocol: slave stat %q: no address", st.Name)
		}
		if !fieldWord(field) {
			return nil, fmt.Errorf("protocol: slave stat %q: no field name after the address's last ':'", st.Name)
		}
		if seen[st.Name] {
			return nil, fmt.Errorf("protocol: slave stat %q given twice", st.Name)
		}
		seen[st.Name] = true
		k, ok := index[addr]
		if !ok {
			k = len(out)
			index[addr] = k
			out = append(out, SlaveStat{Addr: addr})
		}
		s := &out[k]
		var dst *int64
		switch field {
		case slaveAckOffset:
			dst = &s.AckOffset
		case slaveBehindBytes:
			dst = &s.BehindBytes
		case slaveLagMs:
			dst = &s.LagMs
		case slaveSinceMs:
			dst = &s.SinceMs
		case slaveInSync:
			switch st.Value {
			case "0":
				s.InSync = false
			case "1":
				s.InSync = true
			default:
				return nil, fmt.Errorf("protocol: slave stat %s = %q: want 0 or 1", st.Name, st.Value)
			}
			continue
		default:
			continue // a newer writer's field
		}
		v, err := strconv.ParseInt(st.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("protocol: slave stat %s = %q: not an integer", st.Name, st.Value)
		}
		*dst = v
	}
	return out, nil
}

// fieldWord reports whether f can be a field name: a lower-case letter,
// then lower-case letters, digits and '_'.
func fieldWord(f string) bool {
	if f == "" || f[0] < 'a' || f[0] > 'z' {
		return false
	}
	for i := 1; i < len(f); i++ {
		c := f[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
