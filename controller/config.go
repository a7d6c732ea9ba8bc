package controller

import (
	"errors"
	"fmt"
	"time"
)

// DefaultElectionTimeout is how long a master may go without a heartbeat
// before Tick proposes an election (RocketMQ's controller waits about 10 s;
// Samsa aims lower).
const DefaultElectionTimeout = 3 * time.Second

// Config is the controller's configuration. Every replica of a replicated
// controller must run with the same Config: UncleanElection changes what
// Apply decides.
type Config struct {
	// ElectionTimeout: a replica whose last heartbeat is older than this is
	// dead. Default DefaultElectionTimeout. Shorter fails over sooner but
	// takes a long GC pause or a slow disk for a death.
	ElectionTimeout time.Duration
	// UncleanElection: when no replica of the sync-state set is alive, or
	// every alive one lacks acknowledged messages (after RecoveryWait),
	// elect the most up-to-date alive replica instead of leaving the group
	// without a master. Default off. On, writes resume sooner but messages
	// acknowledged by the old master and not yet on the new one are lost;
	// such a result carries Unclean.
	UncleanElection bool
	// RecoveryWait bounds how long a group whose master is gone waits for
	// more of its sync-state set before it elects, when every alive
	// candidate has restarted since the master was last heard (the whole
	// group went down: any of them may have lost an unsynced tail that
	// another still holds), or when every alive candidate is behind what
	// the group acknowledged. Counted from the first candidate's return.
	// Default 2×ElectionTimeout. Longer waits more for the member holding
	// the most; past it the best alive candidate is elected if it holds
	// everything acknowledged, else (without UncleanElection) the group
	// stays without a master until an operator elects unclean.
	RecoveryWait time.Duration
}

// EnsureDefaults fills the zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.RecoveryWait == 0 {
		c.RecoveryWait = 2 * c.ElectionTimeout
	}
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var errs []error
	if c.ElectionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("controller: ElectionTimeout %v must be > 0", c.ElectionTimeout))
	}
	if c.RecoveryWait < 0 {
		errs = append(errs, fmt.Errorf("controller: RecoveryWait %v must be >= 0", c.RecoveryWait))
	}
	return errors.Join(errs...)
}

// String is stable, for result files and logs.
func (c Config) String() string {
	return fmt.Sprintf("electionTimeout=%v unclean=%v recoveryWait=%v", c.ElectionTimeout, c.UncleanElection, c.RecoveryWait)
}
