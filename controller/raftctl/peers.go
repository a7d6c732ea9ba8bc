package raftctl

import (
	"fmt"
	"net"
	"strings"
)

// Peer is one controller replica: its Raft id, the address of its Raft
// transport (replica to replica) and the address of its server for brokers
// and tools (RPC).
type Peer struct {
	ID       string
	RaftAddr string
	RPCAddr  string
}

func (p Peer) String() string { return p.ID + "=" + p.RaftAddr + "@" + p.RPCAddr }

// FormatPeers is the inverse of ParsePeers.
func FormatPeers(ps []Peer) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// ParsePeers reads the peer list of the --peers flag:
//
//	ID=RAFTHOST:RAFTPORT@RPCHOST:RPCPORT[,...]
//
// for example "1=10.0.0.1:9877@10.0.0.1:9878,2=10.0.0.2:9877@10.0.0.2:9878".
// Every replica of a controller must be given the same list. IDs are
// non-empty words without '=', ',' or '@'; IDs and both address sets must
// be unique. Every error of the list is reported at once.
func ParsePeers(s string) ([]Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("raftctl: empty peer list: want ID=RAFTHOST:PORT@RPCHOST:PORT[,...]")
	}
	var (
		ps   []Peer
		errs []string
	)
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		id, addrs, ok := strings.Cut(item, "=")
		raftAddr, rpcAddr, ok2 := strings.Cut(addrs, "@")
		if !ok || !ok2 {
			errs = append(errs, fmt.Sprintf("%q: want ID=RAFTHOST:PORT@RPCHOST:PORT", item))
			continue
		}
		ps = append(ps, Peer{ID: strings.TrimSpace(id), RaftAddr: strings.TrimSpace(raftAddr), RPCAddr: strings.TrimSpace(rpcAddr)})
	}
	if err := validatePeers(ps); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("raftctl: peers: %s", strings.Join(errs, "; "))
	}
	return ps, nil
}

func validatePeers(ps []Peer) error {
	var errs []string
	ids, rafts, rpcs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range ps {
		if p.ID == "" || strings.ContainsAny(p.ID, "=,@ ") {
			errs = append(errs, fmt.Sprintf("id %q: a non-empty word without '=', ',', '@' or spaces", p.ID))
		}
		for _, a := range []string{p.RaftAddr, p.RPCAddr} {
			host, port, err := net.SplitHostPort(a)
			if err != nil || port == "" || port == "0" {
				errs = append(errs, fmt.Sprintf("peer %s: address %q: want host:port with a port", p.ID, a))
				continue
			}
			// A peer address is advertised to the others: it must name a host.
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				errs = append(errs, fmt.Sprintf("peer %s: address %q: name a host the other replicas and brokers can reach, not %q", p.ID, a, host))
			}
		}
		if ids[p.ID] {
			errs = append(errs, fmt.Sprintf("id %s twice", p.ID))
		}
		if rafts[p.RaftAddr] {
			errs = append(errs, fmt.Sprintf("raft address %s twice", p.RaftAddr))
		}
		if rpcs[p.RPCAddr] {
			errs = append(errs, fmt.Sprintf("rpc address %s twice", p.RPCAddr))
		}
		ids[p.ID], rafts[p.RaftAddr], rpcs[p.RPCAddr] = true, true, true
	}
	if len(ps) == 0 {
		errs = append(errs, "no peer")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
