package resultfile

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is what every experiment file starts with: its name (its results
// go to <results>/<name>/ and its PERFORMANCE.md section is named so),
// its kind and what it is about. Experiment types embed it.
type Spec struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
}

func (s *Spec) spec() *Spec { return s }

// Header is the header of the result of a run of s starting now.
func (s *Spec) Header(quick bool) Header {
	return Header{Experiment: s.Name, Kind: s.Kind, Description: s.Description, Quick: quick, Start: time.Now().UTC()}
}

// ReadExperiment reads the experiment file at path into a new E (an
// unknown field is an error) and checks that its kind is one of kinds.
func ReadExperiment[E any, PE interface {
	*E
	spec() *Spec
}](path string, kinds ...string) (*E, error) {
	var e E
	if err := ReadStrict(path, &e); err != nil {
		return nil, err
	}
	if k := PE(&e).spec().Kind; !slices.Contains(kinds, k) {
		q := make([]string, len(kinds))
		for i, k := range kinds {
			q[i] = strconv.Quote(k)
		}
		return nil, fmt.Errorf("%s: kind %q is not %s", path, k, strings.Join(q, " or "))
	}
	return &e, nil
}

// Settings are the parameters an experiment file sets for a run.
type Settings interface {
	// EnsureDefaults fills the zero fields with their defaults.
	EnsureDefaults()
	// Validate reports every bad field at once.
	Validate() error
}

// Forms are an experiment file's settings in its two forms: Base, what
// a run does, and Quick, the overrides of the quick form (--quick).
// Experiment types embed them; PS is *S.
type Forms[S any, PS interface {
	*S
	Settings
}] struct {
	Base  S               `json:"base"`
	Quick json.RawMessage `json:"quick,omitempty"`
}

// Settings are Base, with Quick's overrides decoded over it when quick is
// set (an unknown field is an error), defaulted and checked: the settings
// of one form.
func (f *Forms[S, PS]) Settings(quick bool) (S, error) {
	s := f.Base
	if quick && len(f.Quick) > 0 {
		if err := DecodeStrict(f.Quick, &s); err != nil {
			return s, fmt.Errorf("quick: %w", err)
		}
	}
	PS(&s).EnsureDefaults()
	return s, PS(&s).Validate()
}

// CheckForms checks both forms of the experiment file at path, the full
// and the quick one, when it loads rather than minutes into a run: form
// returns one's settings or what is wrong with them.
func CheckForms[S any](path string, form func(quick bool) (S, error)) error {
	for _, quick := range []bool{false, true} {
		if _, err := form(quick); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
