// Package remoting is the client side of RocketMQ's remoting protocol:
// one TCP connection per peer address, requests multiplexed on it by
// opaque and pipelined.
//
// Each connection has two goroutines. The writer owns the socket's write
// side: senders encode their frames into a shared buffer (large bodies
// are queued by reference and go out with writev) and wake it; it takes
// everything queued and writes it in one call, so frames batch under load
// and a lone request waits for nothing. The reader owns the read side: it
// decodes frames and hands each response to the waiter registered under
// its opaque; a request from the peer (NOTIFY_CONSUMER_IDS_CHANGED, ...)
// goes to Options.OnRequest in a goroutine of its own, and its answer, if
// any, goes back through the writer.
//
// A request ends exactly once: with its response, with its context's end
// (ErrTimeout, matching context.DeadlineExceeded too, or the context's
// error on cancel), or with ErrConnection when the connection fails; then
// every pending request on it fails at once, the connection is dropped,
// and the next request to the address dials again.
//
// Client is safe for concurrent use. Close fails pending requests with
// ErrClosed and waits for the connections' goroutines.
package remoting
