package offsets

import (
	"errors"
	"syscall"
	"time"
)

// Run saves the table every Config.SaveInterval when it changed, until
// stop closes; the broker saves it once more at Close (Save(true)). A
// full disk is logged once, and once more when a save succeeds again; the
// file keeps its last saved version meanwhile. Run owns nothing but its
// ticker.
func (t *Table) Run(stop <-chan struct{}) {
	tick := time.NewTicker(t.cfg.SaveInterval)
	defer tick.Stop()
	full := false
	for {
		select {
		case <-tick.C:
			full = t.logSave(t.Save(false), full)
		case <-stop:
			return
		}
	}
}

// logSave logs a periodic save's result; full says the last one failed
// for lack of space and said so. It returns full for the next.
func (t *Table) logSave(err error, full bool) bool {
	switch {
	case err == nil:
		if full {
			t.cfg.Logger.Info("broker: consumer offsets saved again after a full disk")
		}
		return false
	case !errors.Is(err, syscall.ENOSPC):
		t.cfg.Logger.Error("broker: persist consumer offsets", "err", err)
		return full
	case !full:
		t.cfg.Logger.Error("broker: persist consumer offsets: disk full; consumerOffset.json keeps its last saved version (not logged again until a save succeeds)",
			"err", err)
	}
	return true
}
