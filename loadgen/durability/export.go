package durability

import (
	"context"
	"time"
)

// What other kill loops (package chaos's fail-over checker) reuse of this
// package: the child-process helpers, the load's message bodies, and the
// read-back of the run's topic into a Ledger.

// Topic and BrokerName are the topic a run writes and the broker group's
// name; ReadBack reads Topic on BrokerName.
const (
	Topic      = topic
	BrokerName = brokerName
)

// Proc is a child process started by StartProc, reaped by a goroutine of
// its own. Safe for concurrent use.
type Proc struct{ p *proc }

// StartProc runs binary with args, its output appended to logPath; the
// child gets SIGKILL should this process die.
func StartProc(name, binary, logPath string, args []string) (*Proc, error) {
	p, err := startProc(name, binary, logPath, args)
	if err != nil {
		return nil, err
	}
	return &Proc{p}, nil
}

// Name is the name StartProc was given.
func (p *Proc) Name() string { return p.p.name }

// Pid is the process id.
func (p *Proc) Pid() int { return p.p.cmd.Process.Pid }

// Alive reports whether the process has not exited yet.
func (p *Proc) Alive() bool { return p.p.alive() }

// Exited is closed once the process has been reaped; Err is then its
// Wait error.
func (p *Proc) Exited() <-chan struct{} { return p.p.exited }

// Err is the Wait error, valid once Exited is closed.
func (p *Proc) Err() error {
	<-p.p.exited
	return p.p.err
}

// Kill sends SIGKILL and waits up to timeout until the process is reaped.
func (p *Proc) Kill(timeout time.Duration) error { return p.p.kill(timeout) }

// Pause sends SIGSTOP; Resume SIGCONT.
func (p *Proc) Pause() error  { return p.p.pause() }
func (p *Proc) Resume() error { return p.p.resume() }

// WaitListening dials addr until it accepts, p exits, or timeout passes.
func WaitListening(p *Proc, addr string, timeout time.Duration) error {
	return waitListening(p.p, addr, timeout)
}

// Body is a load message's body: id, a newline, padding to size; IDOf
// reads the id back ("" if there is none).
func Body(id string, size int) []byte { return body(id, size) }

// IDOf reads a Body's id back.
func IDOf(b []byte) string { return idOf(b) }

// ReadBack reads every queue of Topic, from the broker its route names,
// from offset 0 to its end into l (Ledger.Final). It returns the messages
// read and a note per queue it could not read to the end.
func ReadBack(ctx context.Context, namesrv string, queues int, l *Ledger, timeout time.Duration) (int64, []string, error) {
	return readBack(ctx, namesrv, queues, l, timeout)
}

// Found is what the read-back recorded with Final: the id at each place.
func (l *Ledger) Found() map[Pos]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[Pos]string, len(l.mu.final))
	for p, k := range l.mu.final {
		out[p] = l.mu.ids.name(k)
	}
	return out
}
