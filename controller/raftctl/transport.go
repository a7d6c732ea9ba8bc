package raftctl

import (
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer over a listener we were given (or
// opened), so tests can bind 127.0.0.1:0 before the peer list is known.
type streamLayer struct {
	net.Listener
}

func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}
