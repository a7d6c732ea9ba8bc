// Package loadgen drives a messaging system with a workload in the manner of
// the OpenMessaging Benchmark and records what it sees with HDR histograms.
//
// A Workload names topics, queues, message size, producers, consumers, a
// target rate, warm-up and duration, and how messages are sent and consumed.
// A Driver adapts one system (Samsa's own client, the official RocketMQ Go
// client against a Samsa cluster, NATS JetStream, Redis streams, RabbitMQ,
// a Kafka-API cluster through franz-go) to the three things the workload
// needs: create topics, produce, consume. The peers' drivers start their
// server themselves on loopback in a temp dir (natsdriver in-process;
// redisdriver and rabbitdriver run the installed binary through peerproc)
// and stop it on Close; kafkadriver drives a live cluster only, with a
// cell's Kafka settings (kafka.go).
//
// Latency is measured two ways:
//
//   - send latency: from the moment a message was due to be sent until its
//     acknowledgement. With a target rate (open loop) "due" is the intended
//     send time on a fixed schedule, so a stalled producer shows up as
//     latency instead of being hidden by sending less (no coordinated
//     omission). With rate 0 (closed loop, as fast as it goes) it is the
//     actual send time.
//   - end-to-end latency: from the same intended (or actual) send time, which
//     every payload carries in its first 8 bytes, until a consumer receives
//     it. Producer and consumer run in this process, so they share a clock.
//     The next 8 bytes name the message (run tag, producer, sequence): a
//     redelivery counts once (Duplicates apart), and acknowledged messages
//     that never arrived are counted (NeverReceived).
//
// The window's end: every message due in the measured window is sent and
// recorded, however late (a producer blocked on its in-flight limit or
// behind schedule when the window closes keeps sending what was due, and
// its schedule lag shows the wait); only when the Drain grace runs out are
// the rest counted as errors (Unsent). The HDR log's last interval runs to
// the end of the drain, so the log holds every sample the summary does.
//
// Samples taken during warm-up are discarded. Run prints a line every
// ReportInterval in the style of Kafka's perf tools and returns a Result
// (JSON-serialisable) with the percentiles of both histograms.
//
// Replication experiments (replication.go): a cell's Cluster names the
// replication (none, async = ASYNC_MASTER, sync = SYNC_MASTER), its slaves
// and the master→slave link's one-way delay and method. A driver whose
// cluster replicates is a ReplicatedDriver: Run records its Replication
// (role, link, the method that ran and why, the link's measured round
// trip) and samples its LagProbe every DefaultLagInterval during the
// measured window into HDR histograms (LagSampler: time behind, bytes
// behind). The link delay itself lives in loadgen/linkdelay: netem inside
// a network namespace of the lab's own where the kernel supports it and
// the cell runs as separate processes, a delaying TCP proxy elsewhere
// (cmd/samsa's embedded cells always take the proxy, and say why); results
// print the delay with its method ("2ms one-way (proxy)") and the round
// trip measured through such a link: the two methods are not the same
// measurement. Comparisons may be additive (kind "additive": Num's
// latency minus Den's against PlusRTT × the link round trip + PlusMs).
//
// Server processes (procstats.go): a driver that can name its server's
// processes (ServerProcessDriver: a peer's process group, or this process
// for an embedded or in-process server) gets their open files and RSS read
// from /proc at the end of the measured window into Result.Server
// (queue-count scaling). The cold-read backlog experiment is a runner of
// its own, in loadgen/backlog.
//
// Distributed runs (part.go, merge.go): with Options.Part, Run runs one
// share of a workload (some of its producers and consumers, by global
// index, with a run tag and a start time every share has), its times on
// the coordinator's clock; Merge joins the shares' results into one,
// histograms merged exactly and delivery sets joined. loadgen/distrib is
// the coordinator and the worker that run the shares on several hosts.
//
// Concurrency: Run owns every goroutine it starts and stops them all before
// it returns. Drivers must allow Send and consumer callbacks from many
// goroutines at once.
package loadgen
