package broker

import (
	"errors"
	"syscall"

	"github.com/samsamq/samsa/storage"
)

// A full disk does not stop the broker from starting or from stopping.
//
//   - Start: the store opens read-only when it must (storage readonly.go:
//     reads served, sends answered SERVICE_NOT_AVAILABLE "disk is full")
//     and takes sends again by itself once space is freed. A config
//     directory that cannot be made for lack of space is logged; the
//     broker runs with what it loaded and saves once it can.
//   - Close (SIGTERM): topics.json and consumerOffset.json that cannot be
//     saved keep their last saved version (jsonFile never replaces a good
//     file with a failed write, and removes the temp file); the store
//     closes uncleanly (storage.ErrDiskFullAtClose: nothing acknowledged is
//     lost, the next start recovers). Each is logged as a warning and Close
//     returns nil, so `samsa broker` exits 0. Any other error (a broken
//     store, EIO) is still returned.
//   - The periodic offset save (offsets.Table.Run) logs a full disk once,
//     and again when a save succeeds.

// isDiskFull says err is a lack of space and nothing worse.
func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) && !errors.Is(err, storage.ErrBroken)
}

// keepOnFull is shutdown's filter: a lack of space saving what (whose
// previous version stays) is logged and dropped; other errors pass.
func (b *Broker) keepOnFull(what, keeps string, err error) error {
	if err == nil || !isDiskFull(err) {
		return err
	}
	b.log.Warn("broker: disk full at shutdown: "+what+" not written; "+keeps, "err", err)
	return nil
}

// startOnFull is New's answer to the config directory that cannot be made:
// true (go on) for lack of space.
func (b *Broker) startOnFull(err error) bool {
	if !isDiskFull(err) {
		return false
	}
	b.log.Warn("broker: disk full at start: cannot make the config directory; topics and offsets are saved once space is freed",
		"dir", b.cfg.ConfigDir(), "err", err)
	return true
}
