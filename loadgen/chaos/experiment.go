package chaos

import (
	"cmp"
	"fmt"
	"time"

	"github.com/samsamq/samsa/internal/resultfile"
)

// Kind is the "kind" of a chaos experiment file (experiments/chaos.json),
// run by `samsa loadgen --experiment` as `samsa chaos` runs.
const Kind = "chaos"

// Experiment is a chaos experiment file: one run's settings, and the
// overrides of its quick form.
type Experiment struct {
	resultfile.Spec
	Base  Settings `json:"base"`
	Quick Settings `json:"quick"`
}

// Settings are the Options an experiment file sets; zero fields keep the
// Options defaults (in Quick: Base's value).
type Settings struct {
	Cycles          int                 `json:"cycles,omitempty"`
	Faults          []string            `json:"faults,omitempty"`
	ElectionTimeout resultfile.Duration `json:"election_timeout,omitempty"`
	SlaveNotCatchup resultfile.Duration `json:"slave_not_catchup,omitempty"`
	Producers       int                 `json:"producers,omitempty"`
	Queues          int                 `json:"queues,omitempty"`
	BodySize        int                 `json:"body_size,omitempty"`
	MinUp           resultfile.Duration `json:"min_up,omitempty"`
	MaxUp           resultfile.Duration `json:"max_up,omitempty"`
}

// LoadExperiment reads and checks a chaos experiment file (unknown
// fields, another kind and options that do not validate are errors).
func LoadExperiment(path string) (*Experiment, error) {
	e, err := resultfile.ReadExperiment[Experiment](path, Kind)
	if err != nil {
		return nil, err
	}
	for _, quick := range []bool{false, true} {
		o := e.Options("samsa", "", 0, quick)
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			return nil, fmt.Errorf("%s (quick %v): %w", path, quick, err)
		}
	}
	return e, nil
}

// Options are the run's options: Base, with quick Quick's non-zero
// fields over it.
func (e *Experiment) Options(binary, dir string, seed uint64, quick bool) Options {
	s := e.Base
	if quick {
		q := e.Quick
		s.Cycles = cmp.Or(q.Cycles, s.Cycles)
		if len(q.Faults) > 0 {
			s.Faults = q.Faults
		}
		s.ElectionTimeout = cmp.Or(q.ElectionTimeout, s.ElectionTimeout)
		s.SlaveNotCatchup = cmp.Or(q.SlaveNotCatchup, s.SlaveNotCatchup)
		s.Producers, s.Queues, s.BodySize = cmp.Or(q.Producers, s.Producers), cmp.Or(q.Queues, s.Queues), cmp.Or(q.BodySize, s.BodySize)
		s.MinUp, s.MaxUp = cmp.Or(q.MinUp, s.MinUp), cmp.Or(q.MaxUp, s.MaxUp)
	}
	return Options{Binary: binary, Dir: dir, Seed: seed, Cycles: s.Cycles, Faults: s.Faults,
		ElectionTimeout: time.Duration(s.ElectionTimeout), SlaveNotCatchup: time.Duration(s.SlaveNotCatchup),
		Producers: s.Producers, Queues: s.Queues, BodySize: s.BodySize,
		MinUp: time.Duration(s.MinUp), MaxUp: time.Duration(s.MaxUp)}
}
