package broker

import (
	"testing"
	"time"

	"github.com/samsamq/samsa/controller"
)

// TestNextHeartbeat: a slave whose master may be gone (its link down, or
// the controller last heard from the master more than 1.5 intervals ago,
// or never since it began leading) asks the controller every
// timeout/15; a master and a slave of a live master keep the interval.
func TestNextHeartbeat(t *testing.T) {
	c := &ctlMode{replDeps: &replDeps{cfg: &Config{BrokerHeartbeatInterval: time.Second, ControllerHeartBeatTimeout: 3 * time.Second}}}
	fast, slow := 200*time.Millisecond, time.Second
	for _, tc := range []struct {
		role   controller.Role
		silent time.Duration
		want   time.Duration
	}{
		{controller.RoleMaster, 0, slow},
		{controller.RoleMaster, -1, slow},
		{controller.RoleNone, 0, fast},
		{controller.RoleSlave, 0, fast}, // no replication link yet
	} {
		c.mu.role, c.mu.masterSilent = tc.role, tc.silent
		if got := c.nextHeartbeat(); got != tc.want {
			t.Errorf("role %v, master silent %v: next heartbeat in %v, want %v", tc.role, tc.silent, got, tc.want)
		}
	}
	c.mu.role, c.mu.lastErr = controller.RoleMaster, "ctlclient: no controller leader answered"
	if got := c.nextHeartbeat(); got != fast {
		t.Errorf("a master whose last heartbeat failed: next in %v, want %v", got, fast)
	}
	c.mu.lastErr = ""
	c.cfg.ControllerHeartBeatTimeout = 300 * time.Millisecond
	c.mu.role = controller.RoleNone
	if got := c.nextHeartbeat(); got != 50*time.Millisecond {
		t.Errorf("a 300 ms timeout: next heartbeat in %v, want the 50 ms floor", got)
	}
}
