// Package distrib spreads one loadgen workload over several worker
// processes, on as many hosts, as the OpenMessaging Benchmark does: a
// cluster that outgrows one load-generating host can still be measured.
// `samsa loadgen worker` runs a Worker; `samsa loadgen --workers A,B,...`
// runs the coordinator (Run).
//
// The split: loadgen.Split hands the workload's producers (global index
// topic × producers + i), then its consumers (global index (topic ×
// groups + group) × consumers + member), to the workers in one rotation.
// Every worker runs the whole workload's settings with the same run tag;
// a producer's index is in every payload's header, so the indices, being
// disjoint, name a message uniquely across the workers, and any worker's
// consumer tells deliveries apart. A worker with nothing to run is refused.
//
// The protocol is HTTP/1.1 with JSON bodies, each request carrying the
// shared token (Authorization: Bearer):
//
//	GET  /v1/clock    the worker's clock (Unix ns)
//	POST /v1/prepare  run id, worker i of n, workload, driver spec, run tag, clock offset, payload bytes
//	POST /v1/start    the start time, on the coordinator's clock
//	GET  /v1/status   ?run=: phase (preparing, ready, running, draining, done, failed), counts
//	POST /v1/drained  every group's deliveries are in (or the drain ran out)
//	GET  /v1/result   ?run=: the worker's loadgen.Result
//	POST /v1/stop     stop the run
//
// The course of a run:
//
//  1. Clocks. For each worker, ClockSamples requests to /v1/clock; offset
//     = worker time − (t0 + t1)/2 of the sample with the smallest round
//     trip (known to ± half of it). It is measured again after the run;
//     the difference is the drift over the run. A worker's times are
//     corrected by the offset only where it exceeds its uncertainty: two
//     clocks on one host, or kept by NTP closer than the round trip, are
//     better left alone than corrected by a measurement's error.
//  2. Prepare. The first worker makes the topics, then the others
//     prepare: each makes its driver (DriverFactory: its own client
//     credentials, the coordinator's cluster address), its consumers and
//     producers, and waits. Its stamps and window are on the
//     coordinator's clock (its own less the applied offset).
//  3. Start, a barrier. Once all are ready, the coordinator picks a start
//     time StartDelay ahead and sends it to all: production starts then
//     everywhere, the window opens Warmup later and lasts Duration, the
//     same wall-clock window on every worker, and report intervals tick
//     on one grid from the window's start.
//  4. Watch. The coordinator reads every worker's status every
//     PollInterval (the heartbeat). A worker that failed, lost the run
//     (restarted), or has not answered for HeartbeatTimeout fails the run
//     with an error naming it, and every worker is told to stop: no run
//     goes on with fewer workers. A worker stops its run on its own when
//     no coordinator has asked after it for its Lease.
//  5. Drain. Once every worker's producers are done, the coordinator
//     waits until the summed received counts reach groups × the summed
//     acknowledged counts, or Drain runs out, and tells every worker.
//  6. Merge. The coordinator fetches each worker's result (whole-window
//     and per-interval HDR histograms, counts, delivery sets) and
//     loadgen.Merge joins them: counts summed, histograms merged exactly
//     (never averaged percentiles), deliveries ORed so a message two
//     workers received counts once, and acknowledged messages no worker
//     received are counted. The merged result is a normal loadgen.Result
//     with a WorkerShare per worker: its clock offset, round trip and
//     drift, its counts and its schedule lag.
//
// End-to-end latency across hosts: a consumer subtracts the producer's
// stamp, made on another host, from its own clock, both corrected to the
// coordinator's. The figure is only as good as the offsets' measurement
// (or the clocks' agreement, where no offset was applied) and the clocks'
// drift, which the result reports beside it (Result.ClockNote).
//
// Security: a worker runs loads on command, so it refuses, before reading
// anything else, a request without the token (compared in constant time,
// as SHA-256 digests), and does nothing for it. The token comes from a
// file or the environment, never a flag ps would show; it travels in the
// clear over plain HTTP, so run workers on a trusted network. The CLI
// binds a worker to loopback unless told otherwise. A request's body is
// bounded (8 MiB), and so is the workload a worker accepts (consumers,
// delivery sets, message size, payload pool, keys): a request cannot
// make a worker allocate more than it received plus a small constant
// before the load it describes runs. A worker reads no files and runs no
// commands a request names; it connects to the cluster the request names
// with its own credentials. The coordinator bounds what it reads of each
// answer too (a result to MaxResultBytes).
//
// Concurrency: a Worker serves requests concurrently and runs one run at
// a time, on a goroutine of its own that owns the driver; Run owns every
// goroutine it starts and returns when they are done.
package distrib
