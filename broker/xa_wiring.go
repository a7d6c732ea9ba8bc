package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/storage"
)

// XA branches live in package broker/xa; this file is their wiring. A
// master opens them beside its transactions (openTxn), whose half
// messages they are made of; a slave has none and answers the XA codes
// SLAVE_NOT_AVAILABLE.

// openXA loads the prepared branches of a master.
func openXA(c *Config, t *txn.Service, st *storage.Store, log *slog.Logger) (*xa.Manager, error) {
	return xa.Open(xa.Config{
		FS:        c.FS,
		ConfigDir: c.ConfigDir(),
		Txn:       t,
		Sync:      func(ctx context.Context) error { return st.FlushTo(ctx, st.WrittenOffset()) },
		// ActiveTimeout and LongPrepared: xaActiveTimeout, xaLongPrepared.
		ActiveTimeout: c.XAActiveTimeout,
		LongPrepared:  c.XALongPrepared,
		Now:           c.Clock,
		Logger:        log,
	})
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
