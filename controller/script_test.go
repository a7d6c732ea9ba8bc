package controller

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Script tests: each testdata/*.txt file is a list of cases,
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
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

type scriptCase struct {
	pre  []string // comments and blank lines before the command
	cmd  string
	want []string
}

func parseScript(t *testing.T, data string) (cases []scriptCase, tail []string) {
	lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
	var pre []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			continue
		}
		c := scriptCase{pre: pre, cmd: l}
		pre = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("line %d: %q: want a ---- line after the command", i+1, l)
		}
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			c.want = append(c.want, lines[i])
		}
		i-- // let the loop see the blank line
		cases = append(cases, c)
	}
	return cases, pre
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cases, tail := parseScript(t, string(data))
			first := runScript(t, cases)
			// Determinism: a second run of the same script says the same.
			if second := runScript(t, cases); strings.Join(first, "\n") != strings.Join(second, "\n") {
				t.Fatalf("two runs of %s differ", f)
			}
			if *rewrite {
				var b strings.Builder
				for i, c := range cases {
					for _, p := range c.pre {
						b.WriteString(p + "\n")
					}
					b.WriteString(c.cmd + "\n----\n" + first[i] + "\n")
				}
				for _, p := range tail {
					b.WriteString(p + "\n")
				}
				if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for i, c := range cases {
				if want := strings.Join(c.want, "\n"); first[i] != want {
					t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", f, c.cmd, first[i], want)
				}
			}
		})
	}
}

// runScript runs the cases on a fresh machine and returns each one's output.
func runScript(t *testing.T, cases []scriptCase) []string {
	s := &scriptRunner{t: t, base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = s.base
	s.m = s.newMachine(Config{})
	out := make([]string, len(cases))
	for i, c := range cases {
		lines := s.run(c.cmd)
		if len(lines) == 0 {
			lines = []string{"(nothing)"}
		}
		out[i] = strings.Join(lines, "\n")
	}
	return out
}

type scriptRunner struct {
	t         *testing.T
	m         *Machine
	base, now time.Time
}

func (s *scriptRunner) newMachine(cfg Config) *Machine {
	m, err := New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}
