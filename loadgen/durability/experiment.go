package durability

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Kind is the "kind" of a durability experiment file and its result.
const Kind = "durability-kill"

// ReplicationKind is the "kind" of a replication kill loop's experiment
// file and result: every cell names a master Role, and the master is
// killed while a slave follows it.
const ReplicationKind = "replication-durability"

// IsKind reports whether kind is one this package runs and renders.
func IsKind(kind string) bool { return kind == Kind || kind == ReplicationKind }

// Experiment is an experiment file of kind "durability-kill" or
// "replication-durability": the settings every cell runs with, and the
// cells, backends × flush policies plus any listed one by one (a
// replication experiment lists its cells, each with a Role).
type Experiment struct {
	resultfile.Spec
	// Base is every cell's settings; Quick overrides them for --quick.
	Base  Settings        `json:"base"`
	Quick json.RawMessage `json:"quick,omitempty"`
	// Backends × Flushes are the cells, in that order.
	Backends []string `json:"backends"`
	Flushes  []string `json:"flushes"`
	// Cells are more cells (an AckBuffered one, say).
	Cells []CellSpec `json:"cells,omitempty"`
	// Seed seeds cell i's kill moments with Seed+i. 0: from the clock.
	Seed uint64 `json:"seed,omitempty"`
}

// Settings are the Options fields an experiment file sets (see Options).
type Settings struct {
	SegmentSize     int64               `json:"segment_size,omitempty"`
	Producers       int                 `json:"producers,omitempty"`
	Queues          int                 `json:"queues,omitempty"`
	BodySize        int                 `json:"body_size,omitempty"`
	Kills           int                 `json:"kills,omitempty"`
	NoTermCycle     bool                `json:"no_term_cycle,omitempty"`
	MinUp           resultfile.Duration `json:"min_up,omitempty"`
	MaxUp           resultfile.Duration `json:"max_up,omitempty"`
	RecoveryTimeout resultfile.Duration `json:"recovery_timeout,omitempty"`
	Props           []string            `json:"props,omitempty"`
}

// CellSpec is one broker configuration.
type CellSpec struct {
	Label       string `json:"label,omitempty"` // default [role ]backend/flush
	Backend     string `json:"backend"`
	Flush       string `json:"flush"`
	AckBuffered bool   `json:"ack_buffered,omitempty"`
	// Props are broker.conf key=value settings of this cell alone, after
	// the base's (stageAppends=false, say).
	Props []string `json:"props,omitempty"`
	// Role is the master's brokerRole in a replication experiment
	// (Options.Role); PauseSlave its Options.PauseSlave.
	Role       string              `json:"role,omitempty"`
	PauseSlave resultfile.Duration `json:"pause_slave,omitempty"`
	// FullOnly leaves the cell out of the quick form.
	FullOnly bool `json:"full_only,omitempty"`
	// ExpectLoss makes the cell a control: its target is to lose some
	// acknowledged messages to the kills (an AckBuffered cell; in a
	// replication experiment, messages missing on a paused slave, each
	// kill's within its lag), which shows the loop can still see a loss.
	ExpectLoss bool `json:"expect_loss,omitempty"`
}

// LoadExperiment reads and checks a durability experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	e, err := resultfile.ReadExperiment[Experiment](path, Kind, ReplicationKind)
	if err != nil {
		return nil, err
	}
	if _, err := e.Expand(false); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := e.Expand(true); err != nil {
		return nil, fmt.Errorf("%s: quick: %w", path, err)
	}
	return e, nil
}

// Cell is a CellSpec with the settings it runs with.
type Cell struct {
	CellSpec
	Settings Settings
}

// Expand lists the cells: Backends × Flushes, then Cells; with quick the
// Quick overrides apply to the settings.
func (e *Experiment) Expand(quick bool) ([]Cell, error) {
	s := e.Base
	if quick && len(e.Quick) > 0 {
		if err := resultfile.DecodeStrict(e.Quick, &s); err != nil {
			return nil, err
		}
	}
	var specs []CellSpec
	for _, b := range e.Backends {
		for _, f := range e.Flushes {
			specs = append(specs, CellSpec{Backend: b, Flush: f})
		}
	}
	specs = append(specs, e.Cells...)
	if len(specs) == 0 {
		return nil, errors.New("no cells")
	}
	var cells []Cell
	var errs []error
	for _, cs := range specs {
		if quick && cs.FullOnly {
			continue
		}
		if cs.Label == "" {
			cs.Label = cs.Backend + "/" + cs.Flush
			if cs.AckBuffered {
				cs.Label += "/ack-buffered"
			}
			if cs.Role != "" {
				cs.Label = cs.Role + " " + cs.Label
			}
			if cs.PauseSlave > 0 {
				cs.Label += ", slave paused " + time.Duration(cs.PauseSlave).String()
			}
		}
		if (e.Kind == ReplicationKind) != (cs.Role != "") {
			errs = append(errs, fmt.Errorf("cell %s: a %s experiment's cells name a role, a %s experiment's none", cs.Label, ReplicationKind, Kind))
		}
		c := Cell{CellSpec: cs, Settings: s}
		o := c.Options("samsa", "", 1)
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("cell %s: %w", cs.Label, err))
		}
		cells = append(cells, c)
	}
	if len(cells) == 0 {
		errs = append(errs, errors.New("no cells in this form"))
	}
	return cells, errors.Join(errs...)
}

// Options are the cell's run options.
func (c Cell) Options(binary, dir string, seed uint64) Options {
	s := c.Settings
	return Options{Binary: binary, Dir: dir, Role: c.Role, PauseSlave: time.Duration(c.PauseSlave),
		Backend: c.Backend, Flush: c.Flush, AckBuffered: c.AckBuffered,
		SegmentSize: s.SegmentSize, Producers: s.Producers, Queues: s.Queues, BodySize: s.BodySize,
		Kills: s.Kills, NoTermCycle: s.NoTermCycle, MinUp: time.Duration(s.MinUp), MaxUp: time.Duration(s.MaxUp),
		RecoveryTimeout: time.Duration(s.RecoveryTimeout), Props: append(slices.Clip(s.Props), c.Props...), Seed: seed}
}
