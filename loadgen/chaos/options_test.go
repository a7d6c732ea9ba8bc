package chaos

import (
	"strings"
	"testing"
)

// TestOptionsValidate: defaults validate; unknown faults and the
// unsupported partition are refused with clear errors, all at once.
func TestOptionsValidate(t *testing.T) {
	o := Options{Binary: "samsa"}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o.Faults = []string{KillMaster, "bogus", PartitionMaster, "worse"}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), `unknown fault "bogus"`) || !strings.Contains(err.Error(), `unknown fault "worse"`) {
		t.Fatalf("got %v", err)
	}
	o = Options{}
	o.EnsureDefaults()
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "no samsa binary") {
		t.Fatalf("no binary: %v", err)
	}
}

// TestSettled: a settled cluster has one writable master with every
// replica in its sync-state set and the others at its epoch.
func TestSettled(t *testing.T) {
	m := brokerRole{master: true, writable: true, epoch: 2, syncSet: 3}
	s := brokerRole{epoch: 2}
	if i, ok := settled(map[int]brokerRole{0: s, 1: m, 2: s}); !ok || i != 1 {
		t.Fatalf("settled = %d, %v", i, ok)
	}
	for name, rs := range map[string]map[int]brokerRole{
		"one missing":     {0: s, 1: m},
		"two masters":     {0: m, 1: m, 2: s},
		"short sync set":  {0: s, 1: {master: true, writable: true, epoch: 2, syncSet: 2}, 2: s},
		"not writable":    {0: s, 1: {master: true, epoch: 2, syncSet: 3}, 2: s},
		"slave old epoch": {0: {epoch: 1}, 1: m, 2: s},
		"no master":       {0: s, 1: s, 2: s},
	} {
		if _, ok := settled(rs); ok {
			t.Errorf("%s: settled", name)
		}
	}
}

// TestShippedExperiment: experiments/chaos.json loads, full and quick.
func TestShippedExperiment(t *testing.T) {
	e, err := LoadExperiment("../../experiments/chaos.json")
	if err != nil {
		t.Fatal(err)
	}
	full, quick := e.Options("samsa", "", 1, false), e.Options("samsa", "", 1, true)
	if full.Cycles < 100 || quick.Cycles >= full.Cycles || quick.ElectionTimeout != full.ElectionTimeout {
		t.Fatalf("full %+v\nquick %+v", full, quick)
	}
}
