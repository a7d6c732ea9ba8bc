package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// XA branches live in package broker/xa; this file is their wiring. A
// master opens them beside its transactions (openTxn), whose half
// messages they are made of; a slave has none and answers the XA codes
// SLAVE_NOT_AVAILABLE.

// openXA loads the prepared branches of a master: from the file and the
// branch records of the log (xa.LogTopic). A prepare record is written as
// a send is acknowledged: stored, flushed to disk, and on a SYNC_MASTER
// held by its slaves (waitSlaves: Replication.replicaStatus); so a slave promoted
// by the controller rebuilds the branches from its copy of the log
// (xa.Manager.Resync, ha_wiring.go).
func openXA(c *Config, t *txn.Service, st *storage.Store, log *slog.Logger, storeHost func() netip.AddrPort,
	waitSlaves func([]storage.AppendResult) error, master func() bool) (*xa.Manager, error) {
	return xa.Open(xa.Config{
		Master:    master,
		FS:        c.FS,
		ConfigDir: c.ConfigDir(),
		Txn:       t,
		Sync:      func(ctx context.Context) error { return st.FlushTo(ctx, st.WrittenOffset()) },
		Log: xa.StoreLog{
			Store: st,
			Write: func(ctx context.Context, m *storage.Message, durable bool) (int64, error) {
				res, err := st.Append(ctx, m)
				off := res.QueueOffset
				if res.Size == 0 { // not stored
					off = -1
				}
				if err != nil || !durable {
					return off, err
				}
				if err := st.FlushTo(ctx, res.PhysicalOffset+int64(res.Size)); err != nil {
					return off, err
				}
				return off, waitSlaves([]storage.AppendResult{res})
			},
			StoreHost: storeHost,
			Now:       c.Clock,
		},
		// ActiveTimeout and LongPrepared: xaActiveTimeout, xaLongPrepared.
		ActiveTimeout: c.XAActiveTimeout,
		LongPrepared:  c.XALongPrepared,
		Now:           c.Clock,
		Logger:        log,
	})
}

// replicaErr is what replicaStatus's answer means to a branch record: nil,
// or an error naming why the slaves do not hold it.
func replicaErr(r *Replication) func([]storage.AppendResult) error {
	return func(res []storage.AppendResult) error {
		if code, remark := r.replicaStatus(res); code != protocol.Success {
			return fmt.Errorf("broker: %s", remark)
		}
		return nil
	}
}

// xaSweepEvery is how often unprepared branches are timed out and long
// prepared ones counted.
const xaSweepEvery = 5 * time.Second

// runXASweep runs x.Sweep every xaSweepEvery until stop closes.
func runXASweep(x *xa.Manager, stop <-chan struct{}) {
	t := time.NewTicker(xaSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			x.Sweep()
		}
	}
}
