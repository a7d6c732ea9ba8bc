package broker

import (
	"net"
	"time"
)

// Replication defaults (RocketMQ's MessageStoreConfig and BrokerConfig
// unless marked ours).
const (
	DefaultHAHeartbeat       = 5 * time.Second
	DefaultHAHousekeeping    = 20 * time.Second
	DefaultHATransferBatch   = 32 << 10
	DefaultHAMaxGapNotInSync = 256 << 20
	DefaultInMemoryMaxRatio  = 40
	// DefaultSlaveSyncInterval is ours: RocketMQ 4.x's SlaveSynchronize
	// period (5.x checks every 3 s and copies every 60 s).
	DefaultSlaveSyncInterval = 10 * time.Second
)

// ensureHADefaults fills the replication settings; EnsureDefaults calls it
// after ListenPort and SyncFlushTimeout have theirs.
func (c *Config) ensureHADefaults() {
	if c.HAListenPort == 0 && !c.setFlags["haListenPort"] && c.ListenPort != 0 {
		c.HAListenPort = c.ListenPort + 1
	}
	setDur(&c.HASendHeartbeatInterval, DefaultHAHeartbeat)
	setDur(&c.HAHousekeepingInterval, DefaultHAHousekeeping)
	setInt(&c.HATransferBatchSize, DefaultHATransferBatch)
	setInt64(&c.HAMaxGapNotInSync, DefaultHAMaxGapNotInSync)
	setDur(&c.HASlaveAckTimeout, c.SyncFlushTimeout)
	c.boolDefault("haFullCopy", &c.HAFullCopy, true)
	c.boolDefault("autoCreateSubscriptionGroup", &c.AutoCreateSubscriptionGroup, true)
	setInt(&c.InSyncReplicas, 1)
	setInt(&c.MinInSyncReplicas, 1)
	setInt(&c.TotalReplicas, max(c.InSyncReplicas, 1))
	if c.AccessMessageInMemoryMaxRatio == 0 && !c.setFlags["accessMessageInMemoryMaxRatio"] {
		c.AccessMessageInMemoryMaxRatio = DefaultInMemoryMaxRatio
	}
	setInt64(&c.TotalPhysicalMemorySize, physicalMemory())
	setDur(&c.SlaveSyncInterval, DefaultSlaveSyncInterval)
}

// validateHA checks the role and the replication settings.
func (c *Config) validateHA(bad func(format string, a ...any)) {
	switch c.BrokerRole {
	case AsyncMaster, SyncMaster:
		if c.BrokerID != 0 && !c.EnableControllerMode { // controller mode: config_controller.go
			bad("brokerRole %s needs brokerId 0, not %d (a slave's id)", c.BrokerRole, c.BrokerID)
		}
	case Slave:
		if c.BrokerID < 1 {
			bad("brokerRole SLAVE needs brokerId 1 or more, not %d (0 is the master's)", c.BrokerID)
		}
	default:
		bad("brokerRole %q is not ASYNC_MASTER, SYNC_MASTER or SLAVE", c.BrokerRole)
	}
	if c.HAListenPort < 0 || c.HAListenPort > 65535 {
		bad("haListenPort %d out of [0, 65535]", c.HAListenPort)
	} else if c.HAListenPort != 0 && c.HAListenPort == c.ListenPort {
		bad("haListenPort %d is listenPort too", c.HAListenPort)
	}
	if c.HAMasterAddress != "" {
		if _, _, err := net.SplitHostPort(c.HAMasterAddress); err != nil {
			bad("haMasterAddress %q is not host:port: %v", c.HAMasterAddress, err)
		}
	}
	for name, d := range map[string]time.Duration{
		"haSendHeartbeatInterval": c.HASendHeartbeatInterval, "haHousekeepingInterval": c.HAHousekeepingInterval,
		"haSlaveAckTimeout": c.HASlaveAckTimeout, "slaveSyncInterval": c.SlaveSyncInterval,
	} {
		if d <= 0 {
			bad("%s %v must be positive", name, d)
		}
	}
	if c.HATransferBatchSize < 1 || c.HATransferBatchSize > 64<<20 {
		bad("haTransferBatchSize %d out of [1, 64 MiB]", c.HATransferBatchSize)
	}
	if c.HAMaxGapNotInSync < 1 {
		bad("haMaxGapNotInSync %d must be positive", c.HAMaxGapNotInSync)
	}
	if c.MinInSyncReplicas < 1 || c.MinInSyncReplicas > c.InSyncReplicas || c.InSyncReplicas > c.TotalReplicas {
		bad("replicas: want 1 <= minInSyncReplicas (%d) <= inSyncReplicas (%d) <= totalReplicas (%d)",
			c.MinInSyncReplicas, c.InSyncReplicas, c.TotalReplicas)
	}
	if c.AccessMessageInMemoryMaxRatio < 0 || c.AccessMessageInMemoryMaxRatio > 100 {
		bad("accessMessageInMemoryMaxRatio %d out of [0, 100]", c.AccessMessageInMemoryMaxRatio)
	}
	if c.TotalPhysicalMemorySize < 1 {
		bad("totalPhysicalMemorySize %d must be positive", c.TotalPhysicalMemorySize)
	}
}

// SlaveAcksNeeded is how many slaves must hold a record before a
// SYNC_MASTER answers SEND_OK: inSyncReplicas counts the master, and a
// SYNC_MASTER waits for one slave at least (RocketMQ's
// CommitLog.handleHA).
func (c *Config) SlaveAcksNeeded() int { return max(c.InSyncReplicas-1, 1) }

// inMemoryBytes is how far behind the CommitLog's end a read may start and
// still count as served from memory (RocketMQ's
// DefaultMessageStore.getMessage: TOTAL_PHYSICAL_MEMORY_SIZE ×
// accessMessageInMemoryMaxRatio / 100).
func (c *Config) inMemoryBytes() int64 {
	return int64(float64(c.TotalPhysicalMemorySize) * (float64(c.AccessMessageInMemoryMaxRatio) / 100))
}

// fallbackPhysicalMemory is TotalPhysicalMemorySize's default when the
// machine's cannot be read.
const fallbackPhysicalMemory = 8 << 30
