package raftctl

import (
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer over a listener we were given (or
// opened), so tests can bind 127.0.0.1:0 before the peer list is known and
// a replica can bind 0.0.0.0 while it advertises its peer address: Addr is
// the address in Peers (what raft tells the other replicas), not the
// listener's.
type streamLayer struct {
	net.Listener
	advertise peerAddr
}

func (s streamLayer) Addr() net.Addr { return s.advertise }

func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

// peerAddr is a host:port as written in Peers (a host name stays a name).
type peerAddr string

func (a peerAddr) Network() string { return "tcp" }
func (a peerAddr) String() string  { return string(a) }
