package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/samsamq/samsa/broker/dashboard"
	"github.com/samsamq/samsa/ha"
	"github.com/samsamq/samsa/storage/vfs"
)

// FlushDiskType is RocketMQ's flushDiskType.
type FlushDiskType string

// Flush types.
const (
	AsyncFlush FlushDiskType = "ASYNC_FLUSH"
	SyncFlush  FlushDiskType = "SYNC_FLUSH"
)

// BrokerRole is RocketMQ's brokerRole.
type BrokerRole string

// Roles (see doc.go, "Master and slave"). A master has brokerId 0, a
// slave brokerId 1 or more. Until a replicator is attached (ha.go), a
// SYNC_MASTER stores and answers SLAVE_NOT_AVAILABLE, as RocketMQ does with
// no slave attached.
const (
	AsyncMaster BrokerRole = "ASYNC_MASTER"
	SyncMaster  BrokerRole = "SYNC_MASTER"
	Slave       BrokerRole = "SLAVE"
)

// Config configures a Broker. Property names (the broker.conf keys, see
// ParseProperties) are RocketMQ's where RocketMQ has the setting. Every
// field is fixed once the Broker starts: no request changes a path, a host
// or anything else in it.
type Config struct {
	// BrokerClusterName (brokerClusterName). Default "DefaultCluster".
	BrokerClusterName string
	// BrokerName (brokerName). Default "broker-a".
	BrokerName string
	// BrokerID (brokerId): 0 is the master. Default 0.
	BrokerID int64
	// NamesrvAddrs (namesrvAddr, ";"-separated host:port list). Empty means
	// the broker registers nowhere (clients must be given its address).
	NamesrvAddrs []string
	// ListenAddr (listenAddr) is the host the remoting listener binds.
	// Default "127.0.0.1": Samsa listens on loopback unless told.
	ListenAddr string
	// ListenPort (listenPort). Default 10911; 0 picks a free port (tests).
	ListenPort int
	// BrokerIP1 (brokerIP1) is the address advertised to name servers and
	// clients. Default: ListenAddr, or 127.0.0.1 when that is a wildcard.
	BrokerIP1 string
	// StorePathRootDir (storePathRootDir): the store's root; topics and
	// offsets live in its config/ folder. Required.
	StorePathRootDir string
	// FlushDiskType (flushDiskType). Default ASYNC_FLUSH. SYNC_FLUSH answers
	// a send only when its record is durable (group commit).
	FlushDiskType FlushDiskType
	// BrokerRole (brokerRole). Default ASYNC_MASTER.
	BrokerRole BrokerRole
	// AutoCreateTopicEnable (autoCreateTopicEnable): a send to an unknown
	// topic creates it from TBW102's settings. Default true.
	AutoCreateTopicEnable bool
	// DefaultTopicQueueNums (defaultTopicQueueNums): queues of TBW102 and of
	// auto-created topics. Default 8.
	DefaultTopicQueueNums int
	// MappedFileSizeCommitLog (mappedFileSizeCommitLog, or RocketMQ 4's
	// older spelling mapedFileSizeCommitLog): CommitLog segment bytes.
	// Default 1 GiB.
	MappedFileSizeCommitLog int64
	// MaxOpenConsumeQueueFiles (maxOpenConsumeQueueFiles): ConsumeQueue
	// files that keep a descriptor open; the rest are opened on use, the
	// least recently used idle one closed. 0 takes the store's default,
	// 1024 (storage.Options.ConsumeQueueMaxOpenFiles).
	MaxOpenConsumeQueueFiles int
	// ReadBlockCacheMB (readBlockCacheMB): MiB of the store's read block
	// cache, which serves the pulls of queues that interleave in the
	// CommitLog from one read of each stretch (storage.Options.ReadCacheSize).
	// 0 takes the store's default, 64; -1 turns it off.
	ReadBlockCacheMB int
	// DirectColdReads (directColdReads): the read block cache reads a
	// stretch of the log that is not in the page cache with O_DIRECT, so
	// a backlog drain does not fill the page cache with bytes read once
	// (storage.Options.DirectColdReads; pwrite backend). Default off.
	DirectColdReads bool
	// TransferMsgByHeap (transferMsgByHeap, RocketMQ's name): every pull
	// reads its records into memory, checks them and writes them from
	// there. Default false: a pull over plain TCP whose records need no
	// read-time check (PullReadCheck) goes from the segment files to the
	// socket with sendfile(2), unread (pwrite and mmap backends; the
	// others, TLS connections and SQL92 filters read as before).
	TransferMsgByHeap bool
	// PullReadCheck (pullReadCheck, ours): which pulls the broker reads
	// and checks (record CRCs) before it sends them. "auto" (default):
	// those of connections whose client has not said it checks CRCs
	// itself (Samsa's client says so on its heartbeats and pulls;
	// RocketMQ's clients do not, so they never get a corrupt record);
	// "always": every pull (no sendfile); "never": none, so a client
	// that does not check may receive a record corrupted at rest.
	PullReadCheck string
	// StageAppends (stageAppends, ours): under ASYNC_FLUSH with the pwrite,
	// odirect or uring backend, keep each CommitLog segment's write buffer in a shared
	// mapping of a stage file (storePathRootDir/stage), so a send is
	// answered once its message is copied there, in the kernel, with no
	// write call (storage Options.NoStage, inverted). Same durability: a
	// process crash loses nothing acknowledged (the next start replays
	// the stages). Default true.
	StageAppends bool
	// FileReservedTime (fileReservedTime, hours): segments older are
	// deleted. Default 72; 0 keeps everything.
	FileReservedTime int
	// DiskMaxUsedSpaceRatio (diskMaxUsedSpaceRatio, percent): above it the
	// oldest segments go. Default 75; 0 turns it off.
	DiskMaxUsedSpaceRatio int
	// FlushIntervalCommitLog (flushIntervalCommitLog, ms): async flush
	// period. Default 500 ms.
	FlushIntervalCommitLog time.Duration
	// FlushCommitLogLeastPages (flushCommitLogLeastPages): async flush when
	// this many 4 KiB pages are dirty. Default 4.
	FlushCommitLogLeastPages int
	// FlushCommitLogThoroughInterval (flushCommitLogThoroughInterval, ms): a
	// full async flush at least this often. Default 10 s.
	FlushCommitLogThoroughInterval time.Duration
	// SyncFlushTimeout (syncFlushTimeout, ms): how long a SYNC_FLUSH send
	// waits before FLUSH_DISK_TIMEOUT. Default 5 s.
	SyncFlushTimeout time.Duration
	// MaxMessageSize (maxMessageSize): the largest message body accepted.
	// Default 4 MiB.
	MaxMessageSize int
	// EnablePropertyFilter (enablePropertyFilter): evaluate SQL92
	// subscriptions on the broker against each message's properties
	// (filter_sql.go). Default false, as RocketMQ: pulls of an SQL92
	// subscription are refused with SYSTEM_ERROR.
	EnablePropertyFilter bool
	// LongPollingEnable (longPollingEnable): hold a suspending pull until a
	// message arrives. Default true; false holds ShortPollingTime instead.
	LongPollingEnable bool
	// ShortPollingTime (shortPollingTimeMills, ms). Default 1 s.
	ShortPollingTime time.Duration
	// LongPollingMaxHold (longPollingMaxHoldMillis, ours, ms) caps the
	// hold a client asks for in suspendTimeoutMillis. Default 30 s.
	LongPollingMaxHold time.Duration
	// MaxHeldPulls (maxHeldPulls, ours) caps the long-poll pulls held at
	// once across connections; a pull past it is answered at once
	// (PULL_NOT_FOUND when there is nothing) instead of held, so a crowd
	// of idle pulls cannot hold the broker's memory. Default 16384.
	MaxHeldPulls int
	// ClientChannelMaxIdle (channelExpiredTimeout, ms): a client silent
	// this long is dropped from its groups. Default 120 s.
	ClientChannelMaxIdle time.Duration
	// RegisterNameServerPeriod (registerNameServerPeriod, ms). Default 30 s.
	RegisterNameServerPeriod time.Duration
	// RegisterBrokerTimeout (registerBrokerTimeoutMills, ms). Default 6 s.
	RegisterBrokerTimeout time.Duration
	// FlushConsumerOffsetInterval (flushConsumerOffsetInterval, ms).
	// Default 5 s.
	FlushConsumerOffsetInterval time.Duration
	// MaxReconsumeTimes (maxReconsumeTimes, ours as a broker default; a
	// client's header value wins): retries before the dead-letter queue.
	// Default 16.
	MaxReconsumeTimes int
	// StoreBackend (storeBackend, ours): "pwrite" (default), "mmap",
	// "odirect" or "uring".
	StoreBackend string
	// TransientStorePoolEnable (transientStorePoolEnable, RocketMQ's name):
	// under ASYNC_FLUSH, answer a send once the message is in the store's
	// user-space write buffer rather than in the kernel (storage
	// Options.AckBuffered): a process crash can then lose acknowledged
	// messages. Default false: nothing acknowledged is lost to a process
	// crash. No effect with mmap or SYNC_FLUSH.
	TransientStorePoolEnable bool
	// MessageIndexEnable (messageIndexEnable): keep the key index that
	// QUERY_MESSAGE reads (storage Options.MessageIndex). Default true.
	MessageIndexEnable bool
	// MaxHashSlotNum (maxHashSlotNum): hash slots per index file. 0 is the
	// store's default, 5,000,000.
	MaxHashSlotNum int
	// MaxIndexNum (maxIndexNum): keys per index file. 0 is the store's
	// default, 20,000,000.
	MaxIndexNum int
	// GroupCommitMaxBatchBytes (groupCommitMaxBatchBytes, ours): SYNC_FLUSH
	// stops a group at this many bytes; 0 is unbounded (default).
	GroupCommitMaxBatchBytes int64
	// GroupCommitMinInterval (groupCommitMinInterval, ours, a Go duration
	// or ms): least time between fsyncs; 0 (default) lets a lone writer
	// wait for no timer.
	GroupCommitMinInterval time.Duration
	// GroupCommitMaxGather (groupCommitMaxGather, ours, a Go duration or
	// ms): SYNC_FLUSH rounds wait at most this long for the writers the
	// last round released (storage.FlushOptions.MaxGather); 0 (default)
	// is the store's 1ms, negative turns it off.
	GroupCommitMaxGather time.Duration
	// AdminListen (adminListen, ours): the admin HTTP listener (/metrics,
	// /debug/pprof). Default "127.0.0.1:0"; "off" disables it.
	AdminListen string
	// TextProtocolEnable (textProtocolEnable, ours): answer text commands
	// on the remoting port. Default true.
	TextProtocolEnable bool
	// MaxFrameSize (maxFrameSize, ours): the largest remoting frame
	// accepted; a larger one closes the connection. Default 16 MiB.
	MaxFrameSize int
	// MaxConcurrentRequests (maxConcurrentRequests, ours): requests in
	// processing at once across connections. Default 1024.
	MaxConcurrentRequests int

	// Replication (config_ha.go checks these; RocketMQ's names unless
	// marked ours).

	// HAListenPort (haListenPort): the replication listener's port.
	// Default listenPort+1 (RocketMQ's BrokerStartup); with listenPort 0,
	// 0: a free port, advertised once the listener has it.
	HAListenPort int
	// HAMasterAddress (haMasterAddress): a slave's master's replication
	// address, host:port. Empty (default): learned from the name server's
	// REGISTER_BROKER answer (its haServerAddr), as RocketMQ does.
	HAMasterAddress string
	// HASendHeartbeatInterval (haSendHeartbeatInterval, ms): how often a
	// slave reports its offset when nothing arrives. Default 5 s.
	HASendHeartbeatInterval time.Duration
	// HAHousekeepingInterval (haHousekeepingInterval, ms): a replication
	// connection silent this long is closed. Default 20 s.
	HAHousekeepingInterval time.Duration
	// HATransferBatchSize (haTransferBatchSize): the most CommitLog bytes
	// the master ships in one frame. Default 32 KiB.
	HATransferBatchSize int
	// HAMaxGapNotInSync (haMaxGapNotInSync): a slave further behind than
	// this many bytes is not in sync (a SYNC_MASTER does not wait for it).
	// Default 256 MiB.
	HAMaxGapNotInSync int64
	// HASlaveAckTimeout (haSlaveAckTimeout, ours, ms): how long a
	// SYNC_MASTER send waits for its slaves before FLUSH_SLAVE_TIMEOUT.
	// Default syncFlushTimeout (RocketMQ waits syncFlushTimeout too).
	HASlaveAckTimeout time.Duration
	// HASlaveAckFlushed (haSlaveAckFlushed, ours): a slave "holds" a
	// record once it is flushed on the slave (true), or once it is
	// appended there (false, default: RocketMQ's meaning; the copy
	// survives the master's loss, not a crash of both).
	HASlaveAckFlushed bool
	// HAFullCopy (haFullCopy, ours): a new, empty slave copies from the
	// master's oldest CommitLog segment (true, default), or from its last
	// segment as RocketMQ does (false: older messages live on the master
	// only).
	HAFullCopy bool
	// Controller mode (config_controller.go, controller_mode.go; RocketMQ
	// 5's names). EnableControllerMode (enableControllerMode): the
	// fail-over controller decides which replica of the group is master;
	// brokerId is then this replica's id in the group (1 or more: the
	// route id 0 goes to whoever is master) and brokerRole says how it
	// writes while master (ASYNC_MASTER or SYNC_MASTER). Default false.
	EnableControllerMode bool
	// ControllerAddrs (controllerAddr, ";"-separated host:port list): the
	// controller replicas. Required in controller mode.
	ControllerAddrs []string
	// BrokerHeartbeatInterval (brokerHeartbeatInterval, ms): how often the
	// broker heartbeats the controller. Default 1 s (RocketMQ's). Shorter
	// tells a new master sooner, at more controller traffic.
	BrokerHeartbeatInterval time.Duration
	// ControllerHeartBeatTimeout (controllerHeartBeatTimeoutMills, ms): a
	// master that has had no answer from the controller to heartbeats sent
	// this long ago stops acknowledging writes (fencing: the controller may
	// elect another master meanwhile). Keep it at most the controller's
	// election timeout. Default 3 s (our controller's
	// DefaultElectionTimeout; RocketMQ's 10 s).
	ControllerHeartBeatTimeout time.Duration
	// HAMaxTimeSlaveNotCatchup (haMaxTimeSlaveNotCatchup, ms): a slave
	// whose acknowledgement has trailed the master's log this long leaves
	// the sync-state set, and joins it again once caught up; one with no
	// replication link leaves after ControllerHeartBeatTimeout, if that
	// is shorter. Default 15 s (RocketMQ's).
	HAMaxTimeSlaveNotCatchup time.Duration
	// DiskStallFailover (diskStallFailoverMillis, ms; ours): a
	// controller-mode master whose store has had a flush (fdatasync) in
	// progress this long tells the controller it cannot serve as master
	// (its heartbeats renew no lease), so another replica is elected
	// instead of the group waiting on a failing disk. Default 10 s;
	// negative turns it off.
	DiskStallFailover time.Duration
	// ctlNow, when set (tests), is controller mode's wall clock instead
	// of time.Now; its leases never read it (ctlMode.elapsed).
	ctlNow func() time.Time
	// controllerClient, when set (tests, and the wiring of the real
	// client), is the controller client New uses; else dialController's.
	controllerClient controllerClient
	// InSyncReplicas (inSyncReplicas): copies a SYNC_MASTER send needs,
	// the master's own counted (RocketMQ's meaning): it waits for
	// inSyncReplicas-1 slaves, and for at least one. Default 1.
	InSyncReplicas int
	// MinInSyncReplicas (minInSyncReplicas): the fewest copies a send may
	// count on when in-sync replicas are lowered automatically. Default 1.
	MinInSyncReplicas int
	// TotalReplicas (totalReplicas): copies of the log in the broker
	// group, the master's counted. Default inSyncReplicas.
	TotalReplicas int
	// SlaveReadEnable (slaveReadEnable): a master's pull answer may send a
	// consumer reading far behind the tail to a slave, and a slave keeps
	// the consumers it serves. Default false: pulls are steered to the
	// master (a slave still serves them when the master is gone).
	SlaveReadEnable bool
	// AccessMessageInMemoryMaxRatio (accessMessageInMemoryMaxRatio,
	// percent): a pull reading more than this share of
	// TotalPhysicalMemorySize behind the CommitLog's end reads "from
	// disk"; with slaveReadEnable the master then suggests a slave.
	// Default 40.
	AccessMessageInMemoryMaxRatio int
	// TotalPhysicalMemorySize (totalPhysicalMemorySize, ours): the memory
	// AccessMessageInMemoryMaxRatio is a share of. Default: the machine's
	// physical memory (RocketMQ's StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE).
	TotalPhysicalMemorySize int64
	// SlaveSyncInterval (slaveSyncInterval, ours, ms): how often a slave
	// copies topics, consumer offsets and subscription groups from its
	// master (RocketMQ's SlaveSynchronize: every 10 s in 4.x). Default
	// 10 s.
	SlaveSyncInterval time.Duration
	// AutoCreateSubscriptionGroup (autoCreateSubscriptionGroup): a
	// consumer group's heartbeat creates its subscription group config
	// (subscriptionGroup.json) on a master. Default true.
	AutoCreateSubscriptionGroup bool
	// TransactionTimeout (transactionTimeOut, ms): a half message younger
	// than this is not checked back. Default 6 s (RocketMQ's).
	TransactionTimeout time.Duration
	// TransactionCheckInterval (transactionCheckInterval, ms): how often a
	// master scans its open half messages. Default 30 s (RocketMQ 5.x;
	// 4.x had 60 s). Shorter finds a lost commit sooner, at a scan each.
	TransactionCheckInterval time.Duration
	// TransactionCheckMax (transactionCheckMax): check-backs per half
	// message before it is discarded to TRANS_CHECK_MAX_TIME_TOPIC.
	// Default 15 (RocketMQ's).
	TransactionCheckMax int
	// XAActiveTimeout (xaActiveTimeout, ms; ours): an XA branch started
	// and not prepared this long is rolled back (package xa). Default 5
	// minutes: longer holds a slow application's branch, shorter frees a
	// dead one's half messages sooner.
	XAActiveTimeout time.Duration
	// XALongPrepared (xaLongPrepared, ms; ours): an XA branch prepared
	// this long is counted and logged as waiting for its coordinator
	// (samsa_broker_xa_long_prepared_branches), never decided. Default 1
	// minute.
	XALongPrepared time.Duration

	// Delayed delivery: delay levels and timers (config_schedule.go).
	ScheduleConfig
	// Connection caps, timeouts and TLS (config_net.go).
	NetConfig
	ACLConfig

	// Version is what the text protocol's version command reports (not a
	// property). Default DefaultVersion.
	Version string
	// HAFault (not a property) injects faults into a slave's replication
	// link: tests stall it to make a SYNC_MASTER time out.
	HAFault *ha.Fault
	// FS is the file system of the store and the config files (not a
	// property). Default vfs.Default.
	FS vfs.FS
	// Logger (not a property). Default slog.Default().
	Logger *slog.Logger
	// Clock (not a property): timestamps, expiry, holds. Default time.Now.
	Clock func() time.Time
	// DashboardAdmin (not a property) makes the dashboard's client to the
	// name servers and the other brokers, for its cluster view; cmd/samsa
	// passes one built on client.Admin (package broker cannot import
	// package client, whose tests start brokers). Default nil: the
	// cluster view shows this broker alone.
	DashboardAdmin dashboard.NewAdmin

	// setFlags records which boolean properties were given, so
	// EnsureDefaults does not overwrite an explicit false.
	setFlags map[string]bool
}

// Defaults.
const (
	DefaultCluster       = "DefaultCluster"
	DefaultBrokerName    = "broker-a"
	DefaultListenPort    = 10911
	DefaultTopicQueues   = 8
	DefaultSegmentSize   = 1 << 30
	DefaultMaxMessage    = 4 << 20
	DefaultMaxFrame      = 16 << 20
	DefaultAdminListen   = "127.0.0.1:0"
	DefaultMaxReconsume  = 16
	DefaultMaxConcurrent = 1024
	DefaultMaxHeldPulls  = 16384
)

func (c *Config) boolDefault(key string, p *bool, def bool) {
	if !c.setFlags[key] {
		*p = def
	}
}

// EnsureDefaults fills zero fields with their defaults. Booleans default to
// true only when not set explicitly (through ParseProperties or SetBool).
func (c *Config) EnsureDefaults() {
	if c.BrokerClusterName == "" {
		c.BrokerClusterName = DefaultCluster
	}
	if c.BrokerName == "" {
		c.BrokerName = DefaultBrokerName
	}
	if c.PullReadCheck == "" {
		c.PullReadCheck = PullReadCheckAuto
	}
	if c.ListenAddr == "" {
		c.ListenAddr = "127.0.0.1"
	}
	if c.ListenPort == 0 && !c.setFlags["listenPort"] {
		c.ListenPort = DefaultListenPort
	}
	if c.BrokerIP1 == "" {
		c.BrokerIP1 = c.ListenAddr
		if ip, err := netip.ParseAddr(c.ListenAddr); err == nil && ip.IsUnspecified() {
			c.BrokerIP1 = "127.0.0.1"
		}
	}
	if c.FlushDiskType == "" {
		c.FlushDiskType = AsyncFlush
	}
	if c.BrokerRole == "" {
		c.BrokerRole = AsyncMaster
	}
	c.boolDefault("autoCreateTopicEnable", &c.AutoCreateTopicEnable, true)
	c.boolDefault("longPollingEnable", &c.LongPollingEnable, true)
	c.boolDefault("textProtocolEnable", &c.TextProtocolEnable, true)
	c.boolDefault("messageIndexEnable", &c.MessageIndexEnable, true)
	c.boolDefault("stageAppends", &c.StageAppends, true)
	setInt(&c.DefaultTopicQueueNums, DefaultTopicQueues)
	setInt64(&c.MappedFileSizeCommitLog, DefaultSegmentSize)
	if c.FileReservedTime == 0 && !c.setFlags["fileReservedTime"] {
		c.FileReservedTime = 72
	}
	if c.DiskMaxUsedSpaceRatio == 0 && !c.setFlags["diskMaxUsedSpaceRatio"] {
		c.DiskMaxUsedSpaceRatio = 75
	}
	setDur(&c.FlushIntervalCommitLog, 500*time.Millisecond)
	setInt(&c.FlushCommitLogLeastPages, 4)
	setDur(&c.FlushCommitLogThoroughInterval, 10*time.Second)
	setDur(&c.SyncFlushTimeout, 5*time.Second)
	setInt(&c.MaxMessageSize, DefaultMaxMessage)
	setDur(&c.ShortPollingTime, time.Second)
	setDur(&c.LongPollingMaxHold, 30*time.Second)
	setDur(&c.ClientChannelMaxIdle, 120*time.Second)
	setDur(&c.RegisterNameServerPeriod, 30*time.Second)
	setDur(&c.RegisterBrokerTimeout, 6*time.Second)
	setDur(&c.FlushConsumerOffsetInterval, 5*time.Second)
	setInt(&c.MaxReconsumeTimes, DefaultMaxReconsume)
	if c.StoreBackend == "" {
		c.StoreBackend = "pwrite"
	}
	if c.AdminListen == "" {
		c.AdminListen = DefaultAdminListen
	}
	setInt(&c.MaxFrameSize, DefaultMaxFrame)
	setInt(&c.MaxHeldPulls, DefaultMaxHeldPulls)
	setInt(&c.MaxConcurrentRequests, DefaultMaxConcurrent)
	c.ensureHADefaults()
	c.ensureControllerDefaults()
	c.ensureTxnDefaults()
	c.ensureScheduleDefaults()
	c.ensureNetDefaults()
	c.ensureACLDefaults()
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

func setInt(p *int, d int) {
	if *p == 0 {
		*p = d
	}
}

func setInt64(p *int64, d int64) {
	if *p == 0 {
		*p = d
	}
}

func setDur(p *time.Duration, d time.Duration) {
	if *p == 0 {
		*p = d
	}
}

// Validate reports every invalid field at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("broker: "+format, a...)) }
	if c.StorePathRootDir == "" {
		bad("storePathRootDir is required")
	}
	if c.BrokerName == "" || strings.ContainsAny(c.BrokerName, " \t\r\n%@") {
		bad("brokerName %q is empty or holds a space, %% or @", c.BrokerName)
	}
	if c.BrokerClusterName == "" {
		bad("brokerClusterName is empty")
	}
	if c.BrokerID < 0 {
		bad("brokerId %d is negative", c.BrokerID)
	}
	for _, a := range c.NamesrvAddrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("namesrvAddr %q is not host:port: %v", a, err)
		}
	}
	if net.ParseIP(c.ListenAddr) == nil && c.ListenAddr != "localhost" {
		bad("listenAddr %q is not an IP address", c.ListenAddr)
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listenPort %d out of [0, 65535]", c.ListenPort)
	}
	if ip, err := netip.ParseAddr(c.BrokerIP1); err != nil || !ip.Is4() {
		bad("brokerIP1 %q is not an IPv4 address (RocketMQ's store host is IPv4 here)", c.BrokerIP1)
	}
	switch c.FlushDiskType {
	case AsyncFlush, SyncFlush:
	default:
		bad("flushDiskType %q is not ASYNC_FLUSH or SYNC_FLUSH", c.FlushDiskType)
	}
	c.validateHA(bad)
	c.validateController(bad)
	c.validateTxn(bad)
	c.validateSchedule(bad)
	c.validateNet(bad)
	c.validateACL(bad)
	if c.DefaultTopicQueueNums < 1 || c.DefaultTopicQueueNums > 1024 {
		bad("defaultTopicQueueNums %d out of [1, 1024]", c.DefaultTopicQueueNums)
	}
	switch c.PullReadCheck {
	case "", PullReadCheckAuto, PullReadCheckAlways, PullReadCheckNever:
	default:
		bad("pullReadCheck %q is not auto, always or never", c.PullReadCheck)
	}
	if c.ReadBlockCacheMB < -1 || c.ReadBlockCacheMB > 1<<20 {
		bad("readBlockCacheMB %d out of [-1, %d]", c.ReadBlockCacheMB, 1<<20)
	}
	if c.MaxOpenConsumeQueueFiles < 0 {
		bad("maxOpenConsumeQueueFiles %d is negative", c.MaxOpenConsumeQueueFiles)
	}
	if c.MappedFileSizeCommitLog < 64<<10 {
		bad("mappedFileSizeCommitLog %d below 64 KiB", c.MappedFileSizeCommitLog)
	}
	if c.FileReservedTime < 0 {
		bad("fileReservedTime %d is negative", c.FileReservedTime)
	}
	if c.DiskMaxUsedSpaceRatio < 0 || c.DiskMaxUsedSpaceRatio > 95 {
		bad("diskMaxUsedSpaceRatio %d out of [0, 95]", c.DiskMaxUsedSpaceRatio)
	}
	for name, d := range map[string]time.Duration{
		"flushIntervalCommitLog": c.FlushIntervalCommitLog, "flushCommitLogThoroughInterval": c.FlushCommitLogThoroughInterval,
		"syncFlushTimeout": c.SyncFlushTimeout, "shortPollingTimeMills": c.ShortPollingTime,
		"longPollingMaxHoldMillis": c.LongPollingMaxHold, "channelExpiredTimeout": c.ClientChannelMaxIdle,
		"registerNameServerPeriod": c.RegisterNameServerPeriod, "registerBrokerTimeoutMills": c.RegisterBrokerTimeout,
		"flushConsumerOffsetInterval": c.FlushConsumerOffsetInterval,
	} {
		if d <= 0 {
			bad("%s %v must be positive", name, d)
		}
	}
	if c.GroupCommitMinInterval < 0 {
		bad("groupCommitMinInterval %v is negative", c.GroupCommitMinInterval)
	}
	if c.GroupCommitMaxBatchBytes < 0 {
		bad("groupCommitMaxBatchBytes %d is negative", c.GroupCommitMaxBatchBytes)
	}
	if c.MaxMessageSize < 1 || c.MaxMessageSize > c.MaxFrameSize {
		bad("maxMessageSize %d out of [1, maxFrameSize %d]", c.MaxMessageSize, c.MaxFrameSize)
	}
	if c.MaxFrameSize < 1<<10 || c.MaxFrameSize > 1<<30 {
		bad("maxFrameSize %d out of [1 KiB, 1 GiB]", c.MaxFrameSize)
	}
	if c.MaxReconsumeTimes < 0 {
		bad("maxReconsumeTimes %d is negative", c.MaxReconsumeTimes)
	}
	if c.MaxConcurrentRequests < 1 {
		bad("maxConcurrentRequests %d must be positive", c.MaxConcurrentRequests)
	}
	if c.MaxHeldPulls < 1 {
		bad("maxHeldPulls %d must be positive", c.MaxHeldPulls)
	}
	switch c.StoreBackend {
	case "pwrite", "mmap", "odirect", "uring":
	default:
		bad("storeBackend %q is not pwrite, mmap, odirect or uring", c.StoreBackend)
	}
	if c.AdminListen != "off" {
		if _, _, err := net.SplitHostPort(c.AdminListen); err != nil {
			bad("adminListen %q is not host:port or off: %v", c.AdminListen, err)
		}
	}
	if c.FS == nil || c.Logger == nil || c.Clock == nil {
		bad("FS, Logger or Clock is nil (call EnsureDefaults)")
	}
	return errors.Join(errs...)
}

// ConfigDir is where topics.json and consumerOffset.json live.
func (c *Config) ConfigDir() string { return filepath.Join(c.StorePathRootDir, "config") }

// String is a stable, sorted key=value form of every property, for logs
// and result files.
// PullReadCheck values (Config.PullReadCheck).
const (
	PullReadCheckAuto   = "auto"
	PullReadCheckAlways = "always"
	PullReadCheckNever  = "never"
)

func (c Config) String() string {
	return "broker.Config{" + strings.Join(c.propertyLines(), ", ") + "}"
}
