package ha

import "errors"

// Errors of the package; match them with errors.Is.
var (
	// ErrSlaveNotAvailable: WaitReplicated found fewer slaves in sync
	// than it needs (or the slaves it waited on went away). The broker
	// answers SLAVE_NOT_AVAILABLE; the record is stored on the master.
	ErrSlaveNotAvailable = errors.New("ha: not enough slaves in sync")
	// ErrSlaveTimeout: WaitReplicated waited AckTimeout without enough
	// acknowledgements. The broker answers FLUSH_SLAVE_TIMEOUT; the
	// record may yet be replicated.
	ErrSlaveTimeout = errors.New("ha: timed out waiting for slaves")
	// ErrClosed: the master or slave is closed.
	ErrClosed = errors.New("ha: closed")
	// ErrRefused: the master refused the slave's handshake (segment size
	// or frame size mismatch); the wrapping error gives its reason.
	ErrRefused = errors.New("ha: handshake refused")
	// ErrProtocol: a frame broke the wire format or the protocol's order.
	ErrProtocol = errors.New("ha: protocol error")
	// ErrEpochMismatch: a transfer frame's epoch disagrees with the
	// slave's epoch history.
	ErrEpochMismatch = errors.New("ha: epoch mismatch")
	// ErrGap: a transfer frame does not start at the slave's log end.
	ErrGap = errors.New("ha: gap in the replicated log")
	// ErrEpochNotAbove: an epoch given from outside
	// (EpochFile.BeginMasterEpochAt) is not above every epoch the file
	// held: the broker is behind the controller's view, or the controller
	// reused an epoch.
	ErrEpochNotAbove = errors.New("ha: master epoch not above the epoch history")
)
