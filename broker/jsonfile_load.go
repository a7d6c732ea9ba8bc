package broker

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
)

// A persisted JSON file never keeps the broker from starting: a file that
// cannot be read or decoded is set aside as <name>.bad-<UTC stamp>, a file
// holding bad entries loads the good ones (the original kept), an empty
// file is no file, and integer keys written bare, as RocketMQ's fastjson
// writes them, are read too (package internal/jsonfile).

// fileReport is where tolerant loads report: a logger, the clock for the
// set-aside names, and the broker's counter of files set aside.
type fileReport struct {
	log      *slog.Logger
	now      func() time.Time
	setAside *atomic.Int64 // nil: not counted
}

// report is r for package jsonfile; nil stays nil.
func (r *fileReport) report() *jsonfile.Report {
	if r == nil {
		return nil
	}
	return &jsonfile.Report{Log: r.log, Now: r.now, SetAside: r.setAside}
}

// newFileReport reports to cfg's logger and clock.
func newFileReport(cfg *Config) *fileReport {
	return &fileReport{log: cfg.Logger, now: cfg.Clock}
}

// loadTolerant reads the file and hands its bytes to decode. It never
// fails: a file that cannot be read, or that decode refuses as a whole, is
// set aside and found is false (start empty). raw is the file's bytes, for
// dropBad when decode found bad entries.
func (f jsonFile) loadTolerant(decode func([]byte) error) (raw []byte, found bool) {
	return f.file().LoadTolerant(decode)
}

// dropBad keeps the original bytes of a file that held bad entries (each
// named in bad) as <name>.bad-<stamp>, then writes the table the caller
// loaded without them with save; a failed save is logged (the caller's
// table stays changed, so its next save retries).
func (f jsonFile) dropBad(raw []byte, bad []string, save func() error) {
	f.file().DropBad(raw, bad, save)
}

// fileReport is where the broker's config files report: its logger,
// clock and stats.
func (b *Broker) fileReport() *fileReport {
	return &fileReport{log: b.log, now: b.cfg.Clock, setAside: &b.stats.configSetAside}
}
