package controller

import (
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// Script tests: each testdata/*.txt file is a scenario for one machine,
// read by github.com/cockroachdb/datadriven: cases of
//
//	# comments
//	command args...
//	----
//	expected output (no blank line)
//
// separated by blank lines. `go test ./controller -run TestScripts -rewrite`
// writes the actual output in place; review it as a diff. Commands:
//
//	config timeout=3s unclean=false [wait=D] new empty machine (the default is timeout=3s)
//	register G ID ADDR [epoch=N] [pos=END@EPOCH] [t=D]
//	heartbeat G ID[,ID...] [epoch=N] [pos=END@EPOCH] [confirmed=N] [failed=WHY] [t=D]
//	alter G from=ID epoch=N set=ID,... setEpoch=N
//	elect G [unclean=true] [t=D]            ElectMaster from the liveness at t
//	tick t=D                                apply every ElectMaster that Tick returns
//	show [G]
//	forget                                  empty the liveness (another replica's view)
//	lead [t=D]                              Machine.Lead: this replica leads from t
//	restored [t=D]                          Machine.Restored: a snapshot installed at t
//
// G is "broker" (cluster "c") or "cluster/broker"; t=D sets the script's
// clock to a fixed base plus D and stays until the next t=.
//
// Every command also runs on a second machine fed the same commands: the
// two must say the same (the machine is deterministic).
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		a, b := newScriptRunner(t), newScriptRunner(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Input != "" {
				d.Fatalf(t, "a command is one line, then ----")
			}
			got := a.run(d.Cmd, d.CmdArgs)
			if again := b.run(d.Cmd, d.CmdArgs); again != got {
				d.Fatalf(t, "two machines fed the same commands differ:\n%s\n---\n%s", got, again)
			}
			return got
		})
	})
}

type scriptRunner struct {
	t         *testing.T
	m         *Machine
	base, now time.Time
}

// newScriptRunner is a fresh machine with the default config, its clock
// at the script's base.
func newScriptRunner(t *testing.T) *scriptRunner {
	s := &scriptRunner{t: t, base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = s.base
	s.m = s.newMachine(Config{})
	return s
}

func (s *scriptRunner) newMachine(cfg Config) *Machine {
	m, err := New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}
