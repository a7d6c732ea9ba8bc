package acl

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Matcher tells whether a remote address is white-listed by one pattern.
type Matcher interface {
	Match(addr netip.Addr) bool
	String() string
}

// ParseAddressPattern reads one white-remote-address pattern, the forms of
// RocketMQ's RemoteAddressStrategyFactory plus CIDR:
//
//	""                   matches nothing
//	"*", "*.*.*.*"       matches every address
//	"192.168.0.1", "::1" one address
//	"192.168.0.{1,2}"    the listed last octets
//	"10.0.0.1,10.0.0.2"  the listed addresses
//	"192.168.*", "192.168.1.1-5", "192.168.10-20.*"
//	                     a range in one octet, the octets after it "*"
//	"10.0.0.0/8"         a CIDR prefix
//
// IPv6 ranges ("fe80::*") are not supported: write them as CIDR.
func ParseAddressPattern(s string) (Matcher, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return noneMatcher{}, nil
	case s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*":
		return allMatcher{}, nil
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("address pattern %q: %w", s, err)
		}
		return prefixMatcher{p.Masked()}, nil
	case strings.HasSuffix(s, "}"):
		open := strings.LastIndexByte(s, '{')
		if open < 0 || !(strings.HasSuffix(s[:open], ".") || strings.HasSuffix(s[:open], ":")) {
			return nil, fmt.Errorf("address pattern %q: want a prefix ending in '.' or ':' then {a,b,...}", s)
		}
		head := s[:open]
		var list []string
		for _, item := range strings.Split(s[open+1:len(s)-1], ",") {
			list = append(list, head+strings.TrimSpace(item))
		}
		return parseList(s, list)
	case strings.Contains(s, ","):
		return parseList(s, strings.Split(s, ","))
	case strings.Contains(s, "*") || strings.Contains(s, "-"):
		return parseRange(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return nil, fmt.Errorf("address pattern %q: not an address: %w", s, err)
	}
	return setMatcher{text: s, set: map[netip.Addr]bool{a.Unmap(): true}}, nil
}

func parseList(s string, items []string) (Matcher, error) {
	m := setMatcher{text: s, set: make(map[netip.Addr]bool, len(items))}
	for _, it := range items {
		a, err := netip.ParseAddr(strings.TrimSpace(it))
		if err != nil {
			return nil, fmt.Errorf("address pattern %q: %q is not an address", s, it)
		}
		m.set[a.Unmap()] = true
	}
	return m, nil
}

// parseRange reads an IPv4 range: exact octets, then one octet that is "*"
// or "a-b", then only "*" (RocketMQ's RangeRemoteAddressStrategy).
func parseRange(s string) (Matcher, error) {
	if strings.Contains(s, ":") {
		return nil, fmt.Errorf("address pattern %q: IPv6 ranges are not supported; use a CIDR prefix", s)
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return nil, fmt.Errorf("address pattern %q: want 2 to 4 dot-separated octets", s)
	}
	r := rangeMatcher{text: s, idx: -1}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if r.idx >= 0 {
			if p != "*" {
				return nil, fmt.Errorf("address pattern %q: octets after a range must be *", s)
			}
			continue
		}
		switch {
		case p == "*":
			r.idx, r.lo, r.hi = i, 0, 255
		case strings.Contains(p, "-"):
			a, b, _ := strings.Cut(p, "-")
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil || lo < 0 || hi > 255 || lo > hi {
				return nil, fmt.Errorf("address pattern %q: bad range %q", s, p)
			}
			r.idx, r.lo, r.hi = i, lo, hi
		default:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n > 255 {
				return nil, fmt.Errorf("address pattern %q: bad octet %q", s, p)
			}
			r.head = append(r.head, byte(n))
		}
	}
	if r.idx <= 0 {
		return nil, fmt.Errorf("address pattern %q: the first octet cannot be a range", s)
	}
	return r, nil
}

type noneMatcher struct{}

func (noneMatcher) Match(netip.Addr) bool { return false }
func (noneMatcher) String() string        { return "" }

type allMatcher struct{}

func (allMatcher) Match(netip.Addr) bool { return true }
func (allMatcher) String() string        { return "*" }

type prefixMatcher struct{ p netip.Prefix }

func (m prefixMatcher) Match(a netip.Addr) bool {
	a = a.Unmap()
	if m.p.Addr().Is4() != a.Is4() {
		return false
	}
	return m.p.Contains(a)
}
func (m prefixMatcher) String() string { return m.p.String() }

type setMatcher struct {
	text string
	set  map[netip.Addr]bool
}

func (m setMatcher) Match(a netip.Addr) bool { return m.set[a.Unmap().WithZone("")] }
func (m setMatcher) String() string          { return m.text }

type rangeMatcher struct {
	text   string
	head   []byte // the exact octets before the range
	idx    int    // the range's octet
	lo, hi int
}

func (m rangeMatcher) Match(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return false
	}
	b := a.As4()
	for i, h := range m.head {
		if b[i] != h {
			return false
		}
	}
	v := int(b[m.idx])
	return v >= m.lo && v <= m.hi
}
func (m rangeMatcher) String() string { return m.text }
