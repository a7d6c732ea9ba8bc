package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/samsamq/samsa/internal/lab"
	"github.com/samsamq/samsa/loadgen/chaos"
)

func init() {
	register(command{name: "chaos", summary: "fail-over chaos checker: kill, pause and partition a controller-mode cluster, check nothing acknowledged is lost", run: runChaos})
}

func runChaos(args []string) error {
	fs := newFlagSet("chaos", "", `Starts 3 controllers, a name server and 3 controller-mode replicas of one
broker group (SYNC_MASTER, inSyncReplicas=2) as processes of this binary on
loopback, sends under load, injects one fault per cycle (seeded order) and
reads every queue back from the final master. Reports sent, acknowledged,
consumed, lost, duplicated, out of order, acknowledged offsets shared, two
masters in one epoch, and RTO per fault kind. Faults: `+strings.Join(chaos.AllFaults, ", ")+`.
Exit status 1 when an acknowledged message was lost, an offset shared or an
epoch had two masters.`)
	cycles := fs.Int("cycles", 6, "faults to inject")
	faults := fs.String("faults", strings.Join(chaos.AllFaults, ","), "fault kinds to draw from, comma-separated")
	seed := fs.Uint64("seed", 0, "seed of the fault order, slave choice and up times (0: from the clock)")
	election := fs.Duration("election-timeout", 3*time.Second, "the controllers' election timeout (the brokers' controllerHeartBeatTimeoutMills follows it)")
	heartbeat := fs.Duration("heartbeat", 0, "the brokers' brokerHeartbeatInterval (0: election timeout / 3, at most 1s)")
	raftTimeout := fs.Duration("raft-timeout", 0, "the controllers' Raft heartbeat and election timeout (0: the controller's default)")
	notCatchup := fs.Duration("slave-not-catchup", 15*time.Second, "haMaxTimeSlaveNotCatchup: a slave trailing this long leaves the sync-state set")
	readTimeout := fs.Duration("read-timeout", 0, "bound on the final read-back of every queue (0: 120s; a long run stores millions of messages)")
	sendTimeout := fs.Duration("send-timeout", 3*time.Second, "each producer's send timeout (RocketMQ's sendMsgTimeout): a send to a paused master waits this long")
	producers := fs.Int("producers", 4, "producers, each sending one message at a time")
	queues := fs.Int("queues", 4, "queues of the topic")
	dir := fs.String("dir", filepath.Join(".benchdata", "chaos"), "parent of the run's data dir and logs")
	keep := fs.Bool("keep", false, "keep the data dir and logs after a run without error")
	out := fs.String("out", filepath.Join("results", "chaos"), "directory of the JSON result")
	perf := fs.String("perf", "", "update the chaos section of this PERFORMANCE.md")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("chaos: the samsa binary to run: %w", err)
	}
	var fl []string
	for _, f := range strings.Split(*faults, ",") {
		if f = strings.TrimSpace(f); f != "" {
			fl = append(fl, f)
		}
	}
	o := chaos.Options{KeepDir: *keep, Cycles: *cycles, Faults: fl,
		ElectionTimeout: *election, HeartbeatInterval: *heartbeat, RaftTimeout: *raftTimeout, ReadTimeout: *readTimeout, SendTimeout: *sendTimeout, SlaveNotCatchup: *notCatchup,
		Producers: *producers, Queues: *queues}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = lab.RunExperiment(ctx, chaos.OptionsExperiment(o), lab.Options{
		Env:    lab.Env{Seed: *seed, DataDir: *dir, Binary: bin, Command: commandLine(), Progress: os.Stdout},
		OutDir: *out, Performance: *perf})
	return err
}
