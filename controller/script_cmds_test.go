package controller

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"
)

// run executes one script command and returns its output ("(nothing)"
// when it has none).
func (s *scriptRunner) run(cmd string, args []datadriven.CmdArg) string {
	lines := s.runLines(cmd, args)
	if len(lines) == 0 {
		return "(nothing)"
	}
	return strings.Join(lines, "\n")
}

// runLines executes one script command and returns its output lines.
// Arguments are positional (no value) or key=value.
func (s *scriptRunner) runLines(cmd string, args []datadriven.CmdArg) []string {
	pos, kv := []string{}, map[string]string{}
	for _, a := range args {
		switch len(a.Vals) {
		case 0:
			pos = append(pos, a.Key)
		case 1:
			kv[a.Key] = a.Vals[0]
		default:
			return []string{"script error: " + a.Key + ": one value, not a list"}
		}
	}
	if v, ok := kv["t"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return []string{"script error: " + err.Error()}
		}
		s.now = s.base.Add(d)
	}
	g := Group{}
	if len(pos) > 0 {
		g = parseGroup(pos[0])
	}
	res := func(r Result, err error) []string {
		if err != nil {
			out := []string{"error: " + err.Error()}
			if r.Fenced {
				out = append(out, r.String())
			}
			return out
		}
		return []string{r.String()}
	}
	switch cmd {
	case "config":
		cfg := Config{}
		if v, ok := kv["timeout"]; ok {
			cfg.ElectionTimeout, _ = time.ParseDuration(v)
		}
		cfg.UncleanElection = kv["unclean"] == "true"
		if v, ok := kv["wait"]; ok {
			cfg.RecoveryWait, _ = time.ParseDuration(v)
		}
		s.m = s.newMachine(cfg)
		return []string{"config " + s.m.Config().String()}
	case "register":
		if len(pos) != 3 {
			return []string{"script error: register G ID ADDR"}
		}
		return res(s.m.Apply(RegisterBroker{Group: g, ID: atoi(pos[1]), Addr: pos[2], Epoch: atoi(kv["epoch"]),
			Pos: parsePos(kv["pos"], kv["confirmed"], kv["damaged"], kv["unverified"])}, s.now))
	case "heartbeat":
		if len(pos) != 2 {
			return []string{"script error: heartbeat G ID[,ID...]"}
		}
		var out []string
		for _, id := range parseIDs(pos[1]) {
			r, err := s.m.Apply(Heartbeat{Group: g, ID: id, Epoch: atoi(kv["epoch"]),
				Pos: parsePos(kv["pos"], kv["confirmed"], kv["damaged"], kv["unverified"]), MasterFailed: kv["failed"]}, s.now)
			for _, l := range res(r, err) {
				out = append(out, fmt.Sprintf("broker %d: %s", id, l))
			}
		}
		return out
	case "alter":
		return res(s.m.Apply(AlterSyncStateSet{Group: g, From: atoi(kv["from"]), MasterEpoch: atoi(kv["epoch"]),
			NewSet: parseIDs(kv["set"]), SyncSetEpoch: atoi(kv["setEpoch"])}, s.now))
	case "elect":
		c := s.m.Elect(g, s.now)
		c.Unclean = kv["unclean"] == "true"
		return append([]string{describeElect(c)}, res(s.m.Apply(c, s.now))...)
	case "tick":
		var out []string
		for _, c := range s.m.Tick(s.now) {
			out = append(out, describeElect(c))
			out = append(out, res(s.m.Apply(c, s.now))...)
		}
		if out == nil {
			out = []string{"no election needed"}
		}
		for _, g := range s.m.State().Groups() {
			if p := s.m.Pending(g); p != "" {
				out = append(out, fmt.Sprintf("pending %s: %s", g, p))
			}
		}
		return out
	case "forget":
		// Another replica takes the scene: the same replicated state, an
		// empty liveness (feed it the renewals it applied with heartbeat).
		s.m.live = newLiveness()
		return []string{"liveness empty"}
	case "lead":
		s.m.Lead(s.now)
		return []string{"leading at " + s.now.Sub(s.base).String()}
	case "restored":
		s.m.Restored(s.now)
		return []string{"restored at " + s.now.Sub(s.base).String()}
	case "show":
		groups := s.m.State().Groups()
		if len(pos) > 0 {
			groups = []Group{g}
		}
		var out []string
		for _, g := range groups {
			out = append(out, res(s.m.State().Show(g))...)
			for _, id := range sortedIDs(keysOf(s.m.State().Replicas(g))) {
				last := "never"
				if at, ok := s.m.Liveness().LastHeartbeat(g, id); ok {
					last = at.Sub(s.base).String()
				}
				line := fmt.Sprintf("  %d %s last=%s alive=%v", id, s.m.State().Replicas(g)[id], last, s.m.Alive(g, id, s.now))
				if p := s.m.Liveness().Position(g, id); p != (Position{}) {
					line += " pos=" + p.String()
				}
				out = append(out, line)
			}
		}
		return out
	}
	return []string{"script error: unknown command " + cmd}
}

func describeElect(c ElectMaster) string {
	out := fmt.Sprintf("elect %s alive=%s", c.Group, formatIDs(c.Alive))
	for _, id := range c.Alive {
		if p, ok := c.Positions[id]; ok {
			out += fmt.Sprintf(" %d:%s", id, p)
		}
	}
	if c.Unclean {
		out += " unclean"
	}
	return out
}

// parsePos parses END@EPOCH (EPOCH defaults to 1), a confirmed offset and
// a count of damaged ranges and the bytes not yet verified.
func parsePos(s, confirmed, damaged, unverified string) Position {
	var p Position
	if s != "" {
		end, epoch, _ := strings.Cut(s, "@")
		p.End = atoi(end)
		p.Epoch = 1
		if epoch != "" {
			p.Epoch = uint64(atoi(epoch))
		}
	}
	p.Confirmed = atoi(confirmed)
	p.Damaged = int(atoi(damaged))
	p.Unverified = atoi(unverified)
	return p
}

func keysOf(m map[int64]string) map[int64]bool {
	out := map[int64]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func parseGroup(s string) Group {
	if c, b, ok := strings.Cut(s, "/"); ok {
		return Group{Cluster: c, Broker: b}
	}
	return Group{Cluster: "c", Broker: s}
}

func parseIDs(s string) []int64 {
	var ids []int64
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			ids = append(ids, atoi(p))
		}
	}
	return ids
}

// atoi parses a script number; a bad one becomes -2, which every command
// refuses with its own error.
func atoi(s string) int64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -2
	}
	return n
}
