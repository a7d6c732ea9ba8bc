// Package ha is the master/slave replication link: a master ships its
// CommitLog to slaves over a TCP port of its own (haListenPort), slaves
// write it through their own storage engine at the same physical offsets,
// and a SYNC_MASTER write waits for slaves' acknowledgements. It follows
// RocketMQ 5.x's AutoSwitch HA (epochs, truncation at the handshake,
// frames that never span two epochs) with its own wire format (frame.go).
//
// # Roles and wiring
//
// One epoch file per broker, next to its store:
//
//	epochs, _ := ha.OpenEpochFile(fs, filepath.Join(storeDir, "epoch"), logger)
//
// A master (ASYNC_MASTER or SYNC_MASTER), before the broker takes writes:
//
//	m, err := ha.NewMaster(ha.MasterConfig{Addr: haAddr, Log: store, Epochs: epochs,
//		InSyncReplicas: 2, AckTimeout: syncFlushTimeout})
//
// SYNC_MASTER's SEND path, after the store's Append returned the record's
// end offset:
//
//	switch err := m.WaitReplicated(end); {
//	case err == nil:                               // SEND_OK
//	case errors.Is(err, ha.ErrSlaveNotAvailable):  // SLAVE_NOT_AVAILABLE
//	case errors.Is(err, ha.ErrSlaveTimeout):       // FLUSH_SLAVE_TIMEOUT
//	default:                                       // ha.ErrClosed: shutting down
//	}
//
// ASYNC_MASTER never calls WaitReplicated; a slow or hung slave then holds
// up nothing. Master.Slaves and Master.ConfirmOffset feed stats.
//
// A slave:
//
//	s, err := ha.NewSlave(ha.SlaveConfig{MasterAddr: func() string { return haMasterAddr },
//		BrokerID: brokerID, Addr: myHAAddr, Log: store, Epochs: epochs})
//
// MasterAddr may return "" until the name server tells the master's HA
// address; the slave retries. Slave.Status feeds stats; Close stops it.
// *storage.Store satisfies Log (SourceLog for a master, ReplicaLog for a
// slave).
//
// # The link
//
//  1. The slave sends HANDSHAKE: its broker id, address, segment size,
//     the largest frame it takes, and where an empty slave starts.
//  2. The master answers with its epoch list, segment size, oldest
//     retained offset and handed offset, or refuses (segment sizes or
//     record sizes differ) with a reason.
//  3. The slave aligns its log (Slave.align): the consistent point is the
//     end of the last epoch both lists share with the same start, capped by
//     both logs' ends (ConsistentPoint). A local tail past it is cut
//     (TruncateTo, which keeps it in the store's lost+found); with no
//     shared epoch, no epoch history, or a point the master no longer
//     retains, the slave discards its log (ResetTo) and copies from the
//     master's oldest byte (or its last segment base with
//     FromLastSegment). A cut of diverged bytes below the broker's
//     AckedMark (what its group acknowledged while it was master) is
//     refused (ErrCutRefused: the slave keeps its log, does not follow,
//     and retries) unless SlaveConfig.MayCutAcked says an unclean decision
//     gave that lineage up; then it is logged at Error as lost
//     acknowledged data. It sends TRANSFER-START with its log end.
//  4. The master streams TRANSFER frames from there: at most
//     TransferBatchSize bytes of whole records (a larger record alone;
//     up to 1 MiB while the slave is 8 MiB or more behind, if it takes
//     that much), never two epochs in one frame, woken by the store's OnHanded; an
//     empty frame is a heartbeat when idle. Each header carries the epoch
//     and its start, the confirm offset and the master's handed offset.
//  5. The slave checks each frame (offset equals its log end, epoch agrees
//     with its list, recorded durably before the data it covers), appends
//     it (AppendReplicated checks every record), and ACKs its log end (its
//     durable end with AckFlushed); it also ACKs every HeartbeatInterval.
//
// Any gap, bad record, epoch disagreement, protocol error, I/O error or
// silence longer than HousekeepingInterval drops the link with one logged
// reason; the slave reconnects with jittered exponential back-off.
//
// # Sync replication
//
// A slave is in sync while its acknowledgement trails the handed offset
// by at most MaxGapNotInSync and it was heard from within
// HousekeepingInterval. WaitReplicated needs InSyncReplicas-1 slaves (the
// master counts as one) to acknowledge the offset. It is group commit:
// waiters wait in offset order and an acknowledgement releases every
// waiter it covers, under one lock, with no goroutine or timer per call
// (one ticker sweeps deadlines) and no allocation in steady state.
//
// # Epochs
//
// Each broker keeps <epoch, start offset> pairs in its epoch file
// (epoch_file.go has the byte layout and the rule when the file is lost or
// corrupt). A master opens a new epoch each time it starts, numbered above
// any it held before; a slave records the epochs of what it copies. No
// epoch number is reused, so two lists that share an entry share the log
// below its start.
//
// # Concurrency
//
// Master and Slave methods are safe for concurrent use. The log's
// OnHanded callback never blocks (it wakes senders through channels of
// one slot). EpochFile is safe for concurrent use but belongs to one
// Master or Slave at a time.
package ha
