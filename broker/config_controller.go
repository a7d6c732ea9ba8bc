package broker

import (
	"net"
	"strings"
	"time"
)

// Controller-mode defaults (RocketMQ's BrokerConfig and MessageStoreConfig
// unless marked ours).
const (
	DefaultBrokerHeartbeatInterval = time.Second
	// DefaultControllerHeartBeatTimeout is ours: the controller's default
	// election timeout (controller.DefaultElectionTimeout), so a master
	// cut off from the controller stops acknowledging writes no later than
	// the controller may elect another (RocketMQ: 10 s).
	DefaultControllerHeartBeatTimeout = 3 * time.Second
	DefaultHAMaxTimeSlaveNotCatchup   = 15 * time.Second
	// DefaultDiskStallFailover is ours: twice the store's flush timeout.
	DefaultDiskStallFailover = 10 * time.Second
)

// splitAddrs splits a ";"-separated address list, dropping blanks.
func splitAddrs(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (c *Config) ensureControllerDefaults() {
	setDur(&c.BrokerHeartbeatInterval, DefaultBrokerHeartbeatInterval)
	setDur(&c.ControllerHeartBeatTimeout, DefaultControllerHeartBeatTimeout)
	setDur(&c.HAMaxTimeSlaveNotCatchup, DefaultHAMaxTimeSlaveNotCatchup)
	setDur(&c.DiskStallFailover, DefaultDiskStallFailover)
}

// validateController checks the controller-mode settings. In controller
// mode brokerId is the replica's id within its group and must be 1 or
// more (the name servers' id 0 is whichever replica is master), brokerRole
// is how it writes while master, and the master comes from the controller,
// never from haMasterAddress.
func (c *Config) validateController(bad func(format string, a ...any)) {
	for name, d := range map[string]time.Duration{
		"brokerHeartbeatInterval": c.BrokerHeartbeatInterval, "controllerHeartBeatTimeoutMills": c.ControllerHeartBeatTimeout,
		"haMaxTimeSlaveNotCatchup": c.HAMaxTimeSlaveNotCatchup,
	} {
		if d <= 0 {
			bad("%s %v must be positive", name, d)
		}
	}
	if !c.EnableControllerMode {
		return
	}
	if c.BrokerHeartbeatInterval > 0 && c.ControllerHeartBeatTimeout > 0 && c.BrokerHeartbeatInterval >= c.ControllerHeartBeatTimeout {
		bad("brokerHeartbeatInterval %v must be below controllerHeartBeatTimeoutMills %v (a master would fence itself between heartbeats)",
			c.BrokerHeartbeatInterval, c.ControllerHeartBeatTimeout)
	}
	if c.BrokerRole != AsyncMaster && c.BrokerRole != SyncMaster {
		bad("enableControllerMode: brokerRole %q must be ASYNC_MASTER or SYNC_MASTER (how this replica writes while the controller makes it master)", c.BrokerRole)
	}
	if c.BrokerID < 1 {
		bad("enableControllerMode: brokerId %d must be 1 or more (this replica's id in its group; the master registers as 0)", c.BrokerID)
	}
	if c.HAMasterAddress != "" {
		bad("enableControllerMode: haMasterAddress %q must be empty (the controller names the master)", c.HAMasterAddress)
	}
	if len(c.ControllerAddrs) == 0 && c.controllerClient == nil {
		bad("enableControllerMode: controllerAddr is empty")
	}
	for _, a := range c.ControllerAddrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("controllerAddr %q is not host:port: %v", a, err)
		}
	}
}
