// Package loadgen drives a messaging system with a workload in the manner of
// the OpenMessaging Benchmark and records what it sees with HDR histograms.
//
// A Workload names topics, queues, message size, producers, consumers, a
// target rate, warm-up and duration, and how messages are sent and consumed.
// A Driver adapts one system (Samsa's own client, the official RocketMQ Go
// client against a Samsa cluster, NATS JetStream) to the three things the
// workload needs: create topics, produce, consume.
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
//
// Samples taken during warm-up are discarded. Run prints a line every
// ReportInterval in the style of Kafka's perf tools and returns a Result
// (JSON-serialisable) with the percentiles of both histograms.
//
// Link latency for replication experiments lives in loadgen/linkdelay:
// a cell whose master→slave HA link should take, say, 2 ms each way
// opens a linkdelay.Link (netem inside a network namespace of the lab's
// own where the kernel supports it, a delaying TCP proxy elsewhere),
// starts its processes with the link's Command and gives the slave the
// link's DialAddr; producers and consumers keep loopback speed. Results
// print the delay with its method ("2ms one-way (netem)") and the round
// trip measured through the link: the two methods are not the same
// measurement.
//
// Concurrency: Run owns every goroutine it starts and stops them all before
// it returns. Drivers must allow Send and consumer callbacks from many
// goroutines at once.
package loadgen
