// Package durability is the lab's real-process crash test: a kill loop that
// runs `samsa namesrv` and `samsa broker` as separate processes on loopback,
// loads the broker with producers that record every acknowledged message,
// kills the broker with SIGKILL at seeded random moments, restarts it on the
// same data directory, and at the end reads every queue back from offset 0
// to say what an acknowledgement was worth.
//
// # One run (Run, one backend × flush policy)
//
//  1. Start the name server and the broker (the binary in Options.Binary;
//     ports chosen free on 127.0.0.1; a fresh data dir under Options.Dir),
//     create one topic of Options.Queues queues.
//  2. Producers (Options.Producers, Samsa's client, one synchronous send at
//     a time, no client retries) send bodies that begin with a unique id
//     ("p<producer>-<seq>\n"). Every acknowledged send is recorded with its
//     queue, queue offset and the broker incarnation (epoch) that answered.
//  3. A consumer (a long-polling pull per queue) records the id it read at
//     every (queue, queue offset), with the epoch it read it in.
//  4. Kills: each cycle waits for the incarnation's first acknowledgement,
//     then a seeded random time in [MinUp, MaxUp], sends SIGKILL, waits for
//     the process to be gone, and restarts it. Recovery time is from the
//     restart to the first acknowledged send. One last cycle stops the
//     broker with SIGTERM instead (a clean shutdown must lose nothing).
//  5. Producers and consumer stop; every queue is read from offset 0 to its
//     end; the Ledger's Tally (package killloop) compares what was
//     acknowledged and seen with what is there.
//
// A message is lost when it was acknowledged and is not in any queue at
// the end; an offset is reused when the consumer read one id at a (queue,
// offset) and the end holds another there; an acknowledged offset is
// reassigned when the acknowledgement named a (queue, offset) that at the
// end holds another id. For a default configuration (no AckBuffered) all
// three must be 0, and so must the ids the consumer read that are gone at
// the end (served then lost): the store's durability level is
// process-crash or better (storage.Options.Durability; the running
// broker states its own in its stats, and the target follows that).
// Nothing may be lost to SIGTERM at any level. Clients run with the
// client's defaults, so recovery is what an application would see.
//
// # The replication loop (Options.Role, replication.go)
//
// With a Role (SYNC_MASTER or ASYNC_MASTER) the broker is a master and a
// second `samsa broker` follows it as its SLAVE (brokerId 1, its own store
// dir and port, a static haMasterAddress, started once the master is
// registered). The master is the one killed, Kills times, each after its
// first SEND_OK and its slave's return to the master's `stats ha` lines.
// Just before each kill the master's lag is sampled (`stats ha`:
// slave:<addr>:ack_offset, behind_bytes, lag_ms; a poller also samples it
// every 100 ms). After the kill, once the slave has dropped the link and
// indexed its log, every queue is read from the slave's address alone
// (client.PullOptions.BrokerAddr: pulls change nothing there) and
// compared with every acknowledgement so far (KillCheck): acknowledged
// messages missing, duplicates, acknowledged places holding another id,
// and missing messages the slave had acknowledged in the sample ("beyond
// the lag", from each record's CommitLog offset in the answer's offset
// message id). Then the master restarts on its data dir (new epoch; the
// slave reconnects and truncates a diverged tail). Only SEND_OK counts as
// acknowledged; a SYNC_MASTER's SLAVE_NOT_AVAILABLE and FLUSH_SLAVE_TIMEOUT
// are stored on the master, not known replicated, and counted apart.
// At the end the load stops, the slave catches up, and a last read must
// find every acknowledged message. Targets: SYNC_MASTER, nothing
// acknowledged missing at any kill; ASYNC_MASTER, nothing beyond the lag;
// both, no duplicate and nothing missing after the catch-up. PauseSlave
// stops the slave (SIGSTOP) before each kill: the ASYNC_MASTER control
// that must show losses. There is no SIGTERM cycle and no live consumer.
//
// # Bounds
//
// Every wait has a deadline (Options' timeouts) and every loop a count;
// a broker that does not come back within RecoveryTimeout fails the run
// with the tail of its log. Children get SIGKILL if this process dies
// (Pdeathsig). The seed is printed and kept in the result: the kill moments
// replay from it; the rest (scheduling, disk) does not.
//
// # Experiments
//
// An experiment file of kind "durability-kill" (experiments/
// durability-kill.json) names the backends and flush policies to cross and
// the settings, plus cells listed one by one: a control with AckBuffered
// (durability memory) that must lose messages, which shows the loop can
// still see a loss. One of kind "replication-durability" (experiments/
// replication-durability.json) lists its cells, each with a role; cells
// marked full_only are left out of the quick form. RunExperiment runs every cell and its result is
// written to results/durability-kill/ and rendered into PERFORMANCE.md
// (Markdown).
//
// The processes, the load, the ledger and the read-back are package
// killloop's, shared with the chaos checker.
//
// Concurrency: Run owns every goroutine and process it starts and stops
// them before it returns.
package durability
