package storage

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/vfs"
)

// The crash conformance suite: does every configuration keep the promise
// its durability level (durability.go) makes, across both kinds of crash?
//
// A cell is a backend that runs on MemFS × flush policy {sync, async,
// none} × AckBuffered {false, true}, plus, for the backends that stage by
// default (pwrite, odirect, uring), async and none without their stage
// (stage=off: appends handed over by write calls); each cell runs three leaves, by the
// crashes its lineages see (crashfs_test.go): crash=process (every crash a
// process crash), crash=power (every crash a power loss) and crash=mixed
// (each crash either, at random: a power loss after a process crash and a
// restart checks that recovery made durable what it read back from the
// page cache before it reported it durable). A leaf runs lineages of cycles:
// open (sometimes crashing inside Open, at its n-th file operation), check,
// then writers append and a reader follows the queues until the machine
// crashes, at a file-operation count or once enough appends are
// acknowledged. After each reopen (conformance_check_test.go):
//
//   - the level holds: every append acknowledged before the crash is there,
//     byte for byte, at its physical offset with its queue offset, when
//     every crash since it was acknowledged is one the level survives
//     (process crash: levels process-crash and power-loss; power loss:
//     power-loss only);
//   - offsets never go backwards: when every crash since was a process
//     crash and the level is at least process-crash, every record a reader
//     got before the crash (GetMessages at queue offset N) is still the
//     record at N;
//   - the log is a prefix of what was written: no record written after a
//     missing one is present; every record is the one written at its
//     physical offset, in order, and every ConsumeQueue indexes exactly
//     its queue's records, offsets 0..n-1 (crashModel.verify);
//   - nothing is cut silently: an acknowledged or observed record that is
//     gone must have been absent from the image the crash left (never
//     handed to the OS, or lost with the power), or be in Dir/lost+found
//     when recovery keeps one. Without that directory (a base that has no
//     lost+found yet) such records are counted and logged, not failed.
//
// The run is seeded: the seed is printed, -seed replays it (each leaf
// derives its own from the seed and its name), and a failure names the
// cell, the seed, the crash history and the first discrepancy. A replay
// draws the same operations, crash modes and crash points; the
// interleaving of appenders, reader, flusher and checkpoints is the
// scheduler's, so it may take another path. Crash
// points: -conformance.crashes in all, split over the leaves; -long
// multiplies them by ten.
var confPoints = flag.Int("conformance.crashes", 2000,
	"crash conformance suite: crash points in all, split over its leaves (each gets at least 20)")

// confCell is one configuration of the suite and the crashes its leaf
// runs.
type confCell struct {
	backend string
	policy  FlushPolicy
	ack     bool // Options.AckBuffered
	noStage bool // Options.NoStage (pwrite's, odirect's and uring's stages are the default)
	crashes confCrashes
}

// confCrashes says which crashes a leaf's lineages see.
type confCrashes int

const (
	onlyProcess confCrashes = iota
	onlyPower
	mixedCrashes
)

var confCrashNames = [...]string{onlyProcess: "process", onlyPower: "power", mixedCrashes: "mixed"}

// draw returns the mode of a cycle's crash.
func (c confCrashes) draw(rng *rand.Rand) crashMode {
	switch {
	case c == onlyProcess, c == mixedCrashes && rng.Intn(2) == 0:
		return processCrash
	}
	return powerLoss
}

func (c confCell) String() string {
	ack := "kernel"
	if c.ack {
		ack = "buffered"
	}
	stage := ""
	if c.noStage {
		stage = "/stage=off"
	}
	return fmt.Sprintf("backend=%s/flush=%s/ack=%s%s/crash=%s", c.backend, c.policy, ack, stage, confCrashNames[c.crashes])
}

func TestConformance(t *testing.T) {
	var cells []confCell
	for _, be := range memBackends(t) {
		for _, p := range []FlushPolicy{FlushSync, FlushAsync, FlushNone} {
			for _, ack := range []bool{false, true} {
				for _, m := range []confCrashes{onlyProcess, onlyPower, mixedCrashes} {
					cells = append(cells, confCell{backend: be, policy: p, ack: ack, crashes: m})
					if stagesByDefault(be) && p != FlushSync && !ack {
						// Staged by default: the hand-over by write calls too.
						cells = append(cells, confCell{backend: be, policy: p, ack: ack, noStage: true, crashes: m})
					}
				}
			}
		}
	}
	points := max(20, (*confPoints+len(cells)-1)/len(cells))
	if *long {
		points *= 10
	}
	seed := *crashSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d: %d leaves × %d crash points", seed, len(cells), points)
	for _, c := range cells {
		t.Run(c.String(), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("replay with: go test ./storage -run 'TestConformance/%s' -seed %d", c, seed)
				}
			}()
			runConformance(t, c, seed, points)
		})
	}
}

// stagesByDefault says whether be stages appends under async and none
// flush unless Options.NoStage.
func stagesByDefault(be string) bool {
	b, err := backend.Get(be)
	if err != nil {
		return false
	}
	st, ok := b.(backend.Stager)
	return ok && st.Stages()
}

// leafSeed derives a leaf's seed from the suite's seed and the leaf's name,
// so that -run on one leaf replays what it did in the whole run.
func leafSeed(seed int64, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return seed ^ int64(h.Sum64())
}

// confStats are what a leaf checked, for its closing log line.
type confStats struct {
	crashes, openCrashes, process, power, lineages int
	acked, seen                                    int // checked present
	lostFound                                      int // gone, in the image, kept in lost+found
	silentCuts                                     int // gone, in the image, no lost+found
}

// runConformance runs one leaf; seed is the suite's (failures print it,
// -seed takes it), the leaf draws from its own derived one.
func runConformance(t *testing.T, c confCell, seed int64, points int) {
	rng := rand.New(rand.NewSource(leafSeed(seed, c.String())))
	var st confStats
	for st.crashes < points {
		st.lineages++
		segSize := int64(4<<10) << rng.Intn(3)
		cqEntries := 4 + rng.Intn(8) // fixed for a store's life, as SegmentSize
		mem := vfs.NewMem()
		led := newConfLedger()
		cycles := 3 + rng.Intn(8)
		for cy := 0; cy < cycles && st.crashes < points; cy++ {
			mode := c.crashes.draw(rng)
			cfs := newCrashFSMode(mem, rng.Int63(), mode)
			opts := crashOptions(t, cfs, c.backend, segSize, cqEntries, c.policy, rng)
			opts.AckBuffered, opts.NoStage = c.ack, c.noStage
			where := fmt.Sprintf("%s seed %d lineage %d cycle %d", c, seed, st.lineages, cy)
			led.scanImage(mem, opts) // the image the last crash left, before Open changes it
			if rng.Intn(8) == 0 {
				cfs.arm(1 + rng.Int63n(60)) // crash inside Open (recovery)
			}
			s, err := Open(opts)
			cfs.disarm()
			if cfs.dead.Load() {
				if s != nil {
					s.Close()
				}
				st.openCrashes++
				st.count(mode)
				led.crashed(mode)
				mem = cfs.clone
				continue
			}
			if err != nil {
				t.Fatalf("%s after %s: Open: %v", where, led.history(), err)
			}
			led.check(t, s, mem, where, &st)
			confCycle(t, s, cfs, led, c.backend, rng)
			s.Close() // against a dead machine: it reaches nothing the clone holds
			st.count(mode)
			led.crashed(mode)
			mem = cfs.clone
		}
	}
	t.Logf("seed %d: %d crash points (%d process, %d power; %d inside Open) over %d lineages; "+
		"checked %d acknowledged and %d observed records present; of those gone, %d cut by recovery into lost+found, %d with no lost+found",
		seed, st.crashes, st.process, st.power, st.openCrashes, st.lineages, st.acked, st.seen, st.lostFound, st.silentCuts)
}

func (st *confStats) count(m crashMode) {
	st.crashes++
	if m == processCrash {
		st.process++
	} else {
		st.power++
	}
}
