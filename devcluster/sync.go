package devcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/samsamq/samsa/broker"
)

// WaitSlavesInSync waits until every slave of the group is connected to
// its master and in sync (within haMaxGapNotInSync, reporting in time),
// failing after timeout or when ctx ends. A SYNC_MASTER answers
// SLAVE_NOT_AVAILABLE until a slave is: the lab waits before it loads a
// replicated cell.
func (g *Group) WaitSlavesInSync(ctx context.Context, timeout time.Duration) error {
	return waitInSync(ctx, g.Broker, len(g.Slaves), time.Now().Add(timeout), timeout)
}

// WaitSlavesInSync waits until every group's slaves are in sync (see
// Group.WaitSlavesInSync), all within one timeout.
func (c *Cluster) WaitSlavesInSync(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, g := range c.Groups {
		if err := waitInSync(ctx, g.Broker, len(g.Slaves), deadline, timeout); err != nil {
			return err
		}
	}
	return nil
}

// waitInSync polls master until n of its slaves are in sync, or fails
// after deadline (timeout is for the message).
func waitInSync(ctx context.Context, master *broker.Broker, n int, deadline time.Time, timeout time.Duration) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		in := 0
		for _, s := range master.Replication().Slaves() {
			if s.InSync {
				in++
			}
		}
		if in >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devcluster: %s: %d of %d slaves in sync after %v", master.Config().BrokerName, in, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
