package raftctl

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsamq/samsa/controller"
)

// maxSnapshot bounds the bytes Restore reads: far above any real state
// (a group is a few hundred bytes), low enough that a bad file cannot eat
// the memory.
const maxSnapshot = 256 << 20

// fsm is the raft.FSM over a controller.Machine. hashicorp/raft calls
// Apply, Snapshot and Restore from its FSM goroutine, one at a time; the
// server's heartbeats and the tick loop read and feed the machine's
// liveness from other goroutines, so every access takes mu.
type fsm struct {
	now func() time.Time
	log *slog.Logger
	mu  struct {
		sync.Mutex
		m *controller.Machine
	}
}

// applied is what Apply returns through ApplyFuture.Response.
type applied struct {
	r   controller.Result
	err error
}

// Apply decodes a committed entry and applies it. An entry that does not
// decode is refused the same way on every replica (nothing changes) and
// logged: it can only come from a bug or a damaged log.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	cmd, err := decodeEntry(l.Data)
	if err != nil {
		f.log.Error("refusing a committed log entry", "index", l.Index, "term", l.Term, "err", err)
		return applied{r: controller.Result{MasterID: controller.NoMaster}, err: err}
	}
	f.mu.Lock()
	r, err := f.mu.m.Apply(cmd, f.now())
	f.mu.Unlock()
	return applied{r: r, err: err}
}

// Snapshot encodes the state now; Persist writes the bytes later, on
// raft's snapshot goroutine.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	b, err := f.mu.m.State().MarshalSnapshot()
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return fsmSnapshot(b), nil
}

// Restore replaces the state with a snapshot's. A snapshot that does not
// validate is refused: raft then fails to start (or to install it) rather
// than serve a wrong state.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer func() { _ = rc.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(rc, maxSnapshot+1))
	if err != nil {
		return fmt.Errorf("raftctl: read snapshot: %w", err)
	}
	if len(b) > maxSnapshot {
		return fmt.Errorf("raftctl: snapshot larger than %d bytes", maxSnapshot)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.mu.m.State().RestoreSnapshot(b); err != nil {
		return err
	}
	f.mu.m.Restored(f.now())
	return nil
}

type fsmSnapshot []byte

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		if cerr := sink.Cancel(); cerr != nil {
			return errors.Join(err, fmt.Errorf("raftctl: cancel snapshot: %w", cerr))
		}
		return err
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}
