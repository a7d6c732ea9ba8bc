// Package netx holds what the servers (broker, name server, replication
// master) share at the connection level: a listener that caps connections
// per server and per remote address and backs off on accept errors
// (Listener), read deadlines that bound a partial frame and an idle
// connection (Deadlines), and optional TLS with RocketMQ's three server
// modes, disabled, permissive (TLS and plain on one port, told apart by the
// first byte) and enforcing (TLSServer, TLSClient).
//
// A Listener is safe for concurrent use; a Deadlines belongs to the one
// goroutine that reads its connection.
package netx
