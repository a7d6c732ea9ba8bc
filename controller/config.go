package controller

import (
	"errors"
	"fmt"
	"time"
)

// DefaultElectionTimeout is how long a master may go without a heartbeat
// before Tick proposes an election (RocketMQ's controller waits about 10 s;
// issue #14 aims lower).
const DefaultElectionTimeout = 3 * time.Second

// Config is the controller's configuration. Every replica of a replicated
// controller must run with the same Config: UncleanElection changes what
// Apply decides.
type Config struct {
	// ElectionTimeout: a replica whose last heartbeat is older than this is
	// dead. Default DefaultElectionTimeout. Shorter fails over sooner but
	// takes a long GC pause or a slow disk for a death.
	ElectionTimeout time.Duration
	// UncleanElection: when no replica of the sync-state set is alive, elect
	// any alive replica (lowest broker id) instead of leaving the group
	// without a master. Default off. On, writes resume sooner but messages
	// acknowledged by the old master and not yet on the new one are lost;
	// such a result carries Unclean.
	UncleanElection bool
}

// EnsureDefaults fills the zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var errs []error
	if c.ElectionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("controller: ElectionTimeout %v must be > 0", c.ElectionTimeout))
	}
	return errors.Join(errs...)
}

// String is stable, for result files and logs.
func (c Config) String() string {
	return fmt.Sprintf("electionTimeout=%v unclean=%v", c.ElectionTimeout, c.UncleanElection)
}
