// Package killloop is what the lab's real-process fault runs share: the
// kill loops of package durability and the fail-over chaos checker of
// package chaos start samsa processes, load them, hurt them, and judge
// what an acknowledgement was worth from the same records.
//
//   - The child-process kit: StartProc runs a samsa process (its output
//     appended to a log, SIGKILL to it should this process die) and
//     reaps it; a Proc is killed (SIGKILL), stopped (SIGTERM), paused
//     (SIGSTOP) and resumed (SIGCONT), and WaitListening waits for its
//     port. RunDir makes a run's directory, Addr a loopback address, Tail
//     reads a log's last lines for an error.
//   - The load: StartLoad starts producers that send bodies beginning
//     with a unique id ("p<producer>-<seq>\n", Body, IDOf, ParseID) to
//     Topic on BrokerName, one synchronous send each at a time with no
//     client retries, and record every SEND_OK (queue, queue offset,
//     CommitLog offset) in the Ledger; a send stored but answered with
//     another status is recorded apart, not as acknowledged. A live
//     reader can record what it reads while the broker is hurt.
//   - The ledger: every acknowledged send, what the live reader saw, and
//     what a read found at each place (ReadBack of every queue from offset
//     0, or ReadReplica of one broker's copy). Tally, Compare and
//     CheckReplica compare them: lost, duplicated, offsets reused or
//     reassigned, served then lost.
//
// Concurrency: a Ledger and a Load are safe for concurrent use; a Proc's
// methods may be called from any goroutine. A Load owns the goroutines it
// starts until Stop returns.
package killloop
