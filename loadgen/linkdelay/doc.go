// Package linkdelay gives the lab's replication experiments a slow
// master→slave HA link — a fixed one-way delay such as 0.5 ms or 2 ms in
// each direction, so a round trip takes 2×delay more — while producers'
// and consumers' links stay at loopback speed. It makes the delay one of
// two ways, and a result says which (Method) beside the delay:
//
//   - Netem: a network namespace of the lab's own (Namespace) whose
//     loopback carries a prio qdisc with a netem child per delay, and u32
//     filters that send TCP segments with the HA port as source or
//     destination there. The kernel delays the packets, handshake
//     included. The cell's processes run inside the namespace, started
//     through `ip netns exec` (Command): Go's setns would move one OS
//     thread, not a process. Needs Linux, root (or CAP_NET_ADMIN and
//     CAP_SYS_ADMIN), ip and tc, and a kernel with sch_prio, sch_netem and
//     cls_u32; Available tries all of it in a throwaway namespace and says
//     what is missing.
//   - ProxyMethod: a TCP Proxy on 127.0.0.1 between the slaves and the
//     master's HA port. Each direction reads into a bounded ring, stamps
//     every chunk with its read time, and writes it out oneWay later, in
//     order; a full ring stops the reading, so the sender's socket fills
//     and it is held back (memory per connection: 2×DefaultRing). It runs
//     anywhere, but adds the proxy's own hop and the wake-up lateness of a
//     sleeping thread (nanosleep; Go timers round sub-millisecond waits up
//     to a millisecond), and it does not delay the connection handshake.
//
// Either way no round trip on the delayed port is shorter than 2×delay;
// how much longer it is depends on the method and the machine, so
// experiments measure it (Ping against an Echo through the link) and
// print the measured round trip beside the delay and the method.
//
// # Safety
//
// Nothing here changes the network of the namespace this process runs
// in: every ip link and tc command runs inside a namespace NewNamespace
// made, named Prefix<pid>-<n>. NewNamespace refuses an existing name, so
// it never adopts a namespace it did not make. Close removes the
// namespace (qdiscs and filters go with it); Sweep removes the ones a
// killed run left, judged by the pid in the name, and keeps those of any
// live process. Processes started by Command get SIGKILL when this
// process dies.
//
// # How experiments use it
//
// A replication cell with a link delay, in the style of the durability
// kill loop (separate processes on loopback):
//
//  1. Sweep once at the start of the run.
//  2. Per cell, pick the ports, then OpenLink(method, delay,
//     "127.0.0.1:<master HA port>"); the method is Choose()'s unless the
//     experiment names one (print Choose's reason when it falls back to
//     the proxy).
//  3. Start the name server, the master, the slave and the load generator
//     with link.Command (the samsa binary re-executed: inside the
//     namespace with netem, where all ports are free; plainly with the
//     proxy). The slave gets link.DialAddr as its master's HA address;
//     everything else uses the real addresses, so only the HA link is slow.
//     The load generator must run where the cluster does: inside the
//     namespace with netem, it is one more process started this way.
//  4. Record link.String() ("2ms one-way (netem)") and the measured round
//     trip with the cell's result; close the link after the processes.
//
// Delay 0 is allowed: with netem the cell still runs in a namespace, with
// the proxy it still pays the hop, so the control differs from the
// delayed cells only in the delay.
//
// # Measured
//
// On the lab's 2-vCPU VM (kernel without sch_prio and sch_netem: netem
// unavailable), 300 pings of 8 bytes, median round trip: loopback 10 µs;
// proxy with 0 delay 22–25 µs; proxy 0.5 ms 1.21–1.37 ms; proxy 2 ms
// 4.28–4.42 ms (0.2–0.4 ms above 2×delay). Run
// `go test ./loadgen/linkdelay -run Measure -v -args -measure` to measure
// a machine.
//
// Concurrency: a Proxy serves connections concurrently; Close may be
// called at any time and waits for every goroutine the proxy started. A
// Namespace's methods and Sweep are safe for concurrent use; Available
// probes once per process.
package linkdelay
