package ha

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Defaults (RocketMQ's MessageStoreConfig names in brackets).
const (
	// DefaultAddr: the HA port (haListenPort: the broker's port + 1), on
	// loopback like every Samsa listener by default.
	DefaultAddr = "127.0.0.1:10912"
	// DefaultTransferBatchSize [haTransferBatchSize].
	DefaultTransferBatchSize = 32 << 10
	// DefaultMaxGapNotInSync [haMaxGapNotInSync].
	DefaultMaxGapNotInSync = 256 << 20
	// DefaultHeartbeatInterval [haSendHeartbeatInterval].
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultHousekeepingInterval [haHousekeepingInterval].
	DefaultHousekeepingInterval = 20 * time.Second
	// DefaultAckTimeout [syncFlushTimeout].
	DefaultAckTimeout = 5 * time.Second
	// DefaultInSyncReplicas [inSyncReplicas, counting the master]: the
	// master and one slave.
	DefaultInSyncReplicas = 2
	DefaultDialTimeout    = 3 * time.Second
	DefaultBackoffMin     = 100 * time.Millisecond
	DefaultBackoffMax     = 5 * time.Second
)

// MasterConfig configures a Master. Zero fields take their defaults
// (EnsureDefaults); Log and Epochs are required.
type MasterConfig struct {
	// Addr is where the master listens for slaves (default DefaultAddr).
	// Ignored when Listener is set.
	Addr string
	// Listener, if set, is used instead of listening on Addr (TLS,
	// tests). The master closes it.
	Listener net.Listener
	// Accept, if set, is applied to each accepted connection before the
	// handshake (the broker's TLS mode); an error closes the connection.
	// It must return within a bound (it may wait for the first byte).
	Accept func(net.Conn) (net.Conn, error)
	// Log is the CommitLog shipped to slaves.
	Log SourceLog
	// Epochs is the broker's epoch file. NewMaster opens a new epoch in
	// it (see EpochFile.BeginMasterEpoch); no one may write to the log
	// before NewMaster returns.
	Epochs *EpochFile
	// Epoch, if not 0, is the epoch NewMaster opens, given from outside
	// (the fail-over controller's master epoch, EpochFile.BeginMasterEpochAt);
	// it must be above every epoch Epochs held. 0 (static roles): one above
	// them, or a clock epoch with no history (EpochFile.BeginMasterEpoch).
	Epoch uint64
	// InSyncReplicas counts the copies a SYNC_MASTER write needs,
	// the master's own included (default 2: one slave). WaitReplicated
	// waits for InSyncReplicas-1 slaves; 1 makes it return at once.
	InSyncReplicas int
	// RequiredOnly: only the slaves named by SetRequired count toward
	// InSyncReplicas; another slave's acknowledgement releases no write.
	// The fail-over controller's brokers set it: the required slaves are
	// the sync-state set, the only replicas an election may choose, so a
	// write acknowledged by a slave outside it could be lost with the
	// master (its power, under async flush) while the slave that holds it
	// is never elected and cuts it to follow. With no slave required
	// nothing is released until one is. Default false (static roles:
	// any slave counts).
	RequiredOnly bool
	// AckTimeout bounds WaitReplicated (default 5 s; the broker passes
	// syncFlushTimeout). Longer rides out slower slaves; shorter answers
	// FLUSH_SLAVE_TIMEOUT sooner.
	AckTimeout time.Duration
	// TransferBatchSize bounds the log bytes in one TRANSFER frame
	// (default 32 KiB); a record larger than it goes alone. Larger
	// batches mean fewer frames and acks, smaller ones earlier acks.
	TransferBatchSize int
	// MaxGapNotInSync: a slave whose acknowledged offset trails the
	// handed offset by more is not in sync (default 256 MiB). Smaller
	// makes SLAVE_NOT_AVAILABLE likelier under bursts.
	MaxGapNotInSync int64
	// HeartbeatInterval: an idle link carries an empty TRANSFER this
	// often (default 5 s), which the slave acknowledges.
	HeartbeatInterval time.Duration
	// HousekeepingInterval: a slave heard from less recently is not in
	// sync and its link is dropped (default 20 s). Also bounds the
	// handshake and each write to a slave.
	HousekeepingInterval time.Duration
	// Logger receives link events (default slog.Default()).
	Logger *slog.Logger
	// AdminSecret, when set, makes slaves authenticate (the broker sets it
	// with ACL on): it gives the secret key of an admin account, ok false
	// for any other access key. A slave without an account, or with a
	// wrong signature, is refused. Nil: no authentication.
	AdminSecret func(accessKey string) (secretKey string, ok bool)
	// OnAuthRefused, when set, is told of each slave refused by
	// AdminSecret's check (the broker counts them).
	OnAuthRefused func(accessKey, reason string)
	// OnLinkDown, when set, is told the broker id of each slave whose
	// link ended with no newer link from it in its place (a dead or cut
	// off slave), after the link is gone from Slaves. It must not block.
	OnLinkDown func(brokerID int64)
}

// EnsureDefaults fills zero fields with their defaults.
func (c *MasterConfig) EnsureDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.InSyncReplicas == 0 {
		c.InSyncReplicas = DefaultInSyncReplicas
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = DefaultAckTimeout
	}
	if c.TransferBatchSize == 0 {
		c.TransferBatchSize = DefaultTransferBatchSize
	}
	if c.MaxGapNotInSync == 0 {
		c.MaxGapNotInSync = DefaultMaxGapNotInSync
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HousekeepingInterval == 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every invalid field at once (call EnsureDefaults
// first).
func (c *MasterConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("ha: MasterConfig."+format, args...))
	}
	if c.Log == nil {
		bad("Log is required")
	}
	if c.Epochs == nil {
		bad("Epochs is required")
	}
	if c.InSyncReplicas < 1 {
		bad("InSyncReplicas %d must be at least 1", c.InSyncReplicas)
	}
	if c.AckTimeout <= 0 {
		bad("AckTimeout %v must be positive", c.AckTimeout)
	}
	if c.TransferBatchSize <= 0 || c.TransferBatchSize > maxWireBody {
		bad("TransferBatchSize %d out of (0, %d]", c.TransferBatchSize, maxWireBody)
	}
	if c.MaxGapNotInSync <= 0 {
		bad("MaxGapNotInSync %d must be positive", c.MaxGapNotInSync)
	}
	if c.HeartbeatInterval <= 0 || c.HousekeepingInterval <= c.HeartbeatInterval {
		bad("HeartbeatInterval %v must be positive and below HousekeepingInterval %v", c.HeartbeatInterval, c.HousekeepingInterval)
	}
	if c.Logger == nil {
		bad("Logger is nil")
	}
	return errors.Join(errs...)
}

// String is a stable one-line form for result files and logs.
func (c MasterConfig) String() string {
	return fmt.Sprintf("ha.MasterConfig{Addr: %q, Listener: %t, InSyncReplicas: %d, RequiredOnly: %t, AckTimeout: %v, TransferBatchSize: %d, MaxGapNotInSync: %d, HeartbeatInterval: %v, HousekeepingInterval: %v}",
		c.Addr, c.Listener != nil, c.InSyncReplicas, c.RequiredOnly, c.AckTimeout, c.TransferBatchSize, c.MaxGapNotInSync, c.HeartbeatInterval, c.HousekeepingInterval)
}

// SlaveConfig configures a Slave. Zero fields take their defaults
// (EnsureDefaults); MasterAddr, BrokerID, Log and Epochs are required.
type SlaveConfig struct {
	// MasterAddr returns the master's HA address: the static
	// haMasterAddress or what the name server reported. "" means not
	// known yet: the slave retries with back-off. Called before each
	// connection attempt.
	MasterAddr func() string
	// BrokerID is this slave's broker id (> 0; 0 is the master).
	BrokerID int64
	// Addr is the address this slave advertises (shown in the master's
	// status; may be empty).
	Addr string
	// Log is the CommitLog the slave writes.
	Log ReplicaLog
	// Epochs is the broker's epoch file.
	Epochs *EpochFile
	// FromLastSegment: a slave with nothing usable (new, diverged beyond
	// repair, or behind the master's retention) starts at the master's
	// last segment base, as RocketMQ does. Default false: it copies the
	// master's whole retained log (a full copy: a later fail-over loses
	// no retained message, at the cost of the copy).
	FromLastSegment bool
	// AckFlushed: acknowledge only what is durable (FlushTo before each
	// acknowledgement), so a SYNC_MASTER's answer means the record is on
	// the slave's disk. Default false: acknowledge what is appended (in
	// the slave's kernel), which survives a slave process crash but not
	// its power loss, and costs no fsync per batch.
	AckFlushed bool
	// MaxBatchSize bounds the log bytes in one TRANSFER frame the slave
	// accepts (default: DefaultTransferBatchSize or Log.MaxRecordSize(),
	// whichever is larger). A larger frame is a protocol error.
	MaxBatchSize int
	// HeartbeatInterval: the slave acknowledges at least this often
	// (default 5 s).
	HeartbeatInterval time.Duration
	// HousekeepingInterval: a master silent for longer is dropped and
	// reconnected (default 20 s). Also bounds the handshake and writes.
	HousekeepingInterval time.Duration
	// DialTimeout bounds a connection attempt (default 3 s).
	DialTimeout time.Duration
	// Dial, if set, opens the connection to the master instead of TCP
	// (a simulated network; the attempt is still bounded by DialTimeout).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// TLS, if set, makes the slave dial the master with TLS (the
	// handshake is bounded by DialTimeout).
	TLS *tls.Config
	// BackoffMin and BackoffMax bound the jittered exponential wait
	// between connection attempts (defaults 100 ms and 5 s).
	BackoffMin, BackoffMax time.Duration
	// Acked, if set, is the broker's AckedMark: a cut of the log below it
	// drops messages the group acknowledged (while this broker was
	// master), which the slave logs at Error and reports through OnCut.
	// The mark is lowered to the cut.
	Acked *AckedMark
	// MayCutAcked, if set, decides whether the slave may cut bytes below
	// Acked to follow its master: lineage is the epoch of the local log's
	// tail (the last epoch entry). It says yes when an unclean decision
	// (the controller's) was made after that epoch; otherwise the slave
	// refuses (ErrCutRefused), keeps the bytes and retries. Unset: cuts
	// below Acked go on, logged and counted.
	MayCutAcked func(lineage uint64) bool
	// OnCut, if set, is told of each cut the slave makes to follow its
	// master: the range and how many of its bytes lay below Acked.
	OnCut func(from, to, acknowledged int64)
	// Fault, if set, injects faults (tests).
	Fault *Fault
	// Logger receives link events (default slog.Default()).
	Logger *slog.Logger
	// AccessKey and SecretKey, when set, authenticate the slave to a
	// master that asks for it (MasterConfig.AdminSecret): an admin
	// account of the master's ACL. Empty: the handshake is unsigned.
	AccessKey, SecretKey string
}

// EnsureDefaults fills zero fields with their defaults.
func (c *SlaveConfig) EnsureDefaults() {
	if c.MaxBatchSize == 0 {
		c.MaxBatchSize = DefaultTransferBatchSize
		if c.Log != nil {
			c.MaxBatchSize = max(c.MaxBatchSize, c.Log.MaxRecordSize())
		}
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HousekeepingInterval == 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every invalid field at once (call EnsureDefaults
// first).
func (c *SlaveConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("ha: SlaveConfig."+format, args...))
	}
	if c.MasterAddr == nil {
		bad("MasterAddr is required")
	}
	if c.BrokerID <= 0 {
		bad("BrokerID %d must be positive (0 is the master)", c.BrokerID)
	}
	if len(c.Addr) > maxAddrLen {
		bad("Addr is %d bytes, at most %d", len(c.Addr), maxAddrLen)
	}
	if c.Log == nil {
		bad("Log is required")
	}
	if c.Epochs == nil {
		bad("Epochs is required")
	}
	if c.MaxBatchSize <= 0 || c.MaxBatchSize > maxWireBody || (c.Log != nil && c.MaxBatchSize < c.Log.MaxRecordSize()) {
		bad("MaxBatchSize %d must be positive, at most %d and hold the largest record", c.MaxBatchSize, maxWireBody)
	}
	if c.HeartbeatInterval <= 0 || c.HousekeepingInterval <= c.HeartbeatInterval {
		bad("HeartbeatInterval %v must be positive and below HousekeepingInterval %v", c.HeartbeatInterval, c.HousekeepingInterval)
	}
	if c.DialTimeout <= 0 {
		bad("DialTimeout %v must be positive", c.DialTimeout)
	}
	if c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin {
		bad("BackoffMin %v and BackoffMax %v: want 0 < min <= max", c.BackoffMin, c.BackoffMax)
	}
	if c.Logger == nil {
		bad("Logger is nil")
	}
	return errors.Join(errs...)
}

// String is a stable one-line form for result files and logs.
func (c SlaveConfig) String() string {
	return fmt.Sprintf("ha.SlaveConfig{BrokerID: %d, Addr: %q, FromLastSegment: %t, AckFlushed: %t, MaxBatchSize: %d, HeartbeatInterval: %v, HousekeepingInterval: %v, DialTimeout: %v, Backoff: %v..%v, Fault: %t}",
		c.BrokerID, c.Addr, c.FromLastSegment, c.AckFlushed, c.MaxBatchSize, c.HeartbeatInterval, c.HousekeepingInterval, c.DialTimeout, c.BackoffMin, c.BackoffMax, c.Fault != nil)
}
