package broker

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics is the broker's Prometheus registry: one collector that reads the
// broker's counters and the store's Metrics at scrape time (nothing on the
// hot path but the atomic adds stats already does), plus Go runtime and
// process collectors. Each Broker has its own registry: no global state.
type metrics struct {
	reg *prometheus.Registry
	req reqMetrics // requests by code and result, send and pull latency (metrics_requests.go)
}

func newMetrics(b *Broker) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{reg: reg}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&brokerCollector{b: b, m: m})
	return m
}

type metricDesc struct {
	d    *prometheus.Desc
	kind prometheus.ValueType
}

func desc(name, help string, kind prometheus.ValueType, labels ...string) metricDesc {
	return metricDesc{d: prometheus.NewDesc(name, help, labels, nil), kind: kind}
}

var (
	mPuts       = desc("samsa_broker_messages_put_total", "Messages stored by sends.", prometheus.CounterValue)
	mGets       = desc("samsa_broker_messages_get_total", "Messages returned by pulls.", prometheus.CounterValue)
	mPutBytes   = desc("samsa_broker_put_body_bytes_total", "Message body bytes stored by sends.", prometheus.CounterValue)
	mGetBytes   = desc("samsa_broker_get_bytes_total", "Record bytes returned by pulls.", prometheus.CounterValue)
	mRead       = desc("samsa_broker_network_read_bytes_total", "Bytes read from client connections.", prometheus.CounterValue)
	mWritten    = desc("samsa_broker_network_written_bytes_total", "Bytes written to client connections.", prometheus.CounterValue)
	mFromFile   = desc("samsa_broker_pull_sendfile_bytes_total", "Pulled record bytes sent from the CommitLog files with sendfile, unread (transferMsgByHeap=false).", prometheus.CounterValue)
	mConns      = desc("samsa_broker_connections_open", "Open client connections.", prometheus.GaugeValue)
	mConnsTotal = desc("samsa_broker_connections_accepted_total", "Client connections accepted.", prometheus.CounterValue)
	mRequests   = desc("samsa_broker_requests_total", "Remoting frames received.", prometheus.CounterValue)
	mBadFrames  = desc("samsa_broker_bad_frames_total", "Connections closed for a bad frame.", prometheus.CounterValue)
	mRefused    = desc("samsa_broker_refused_connections_total", "Connections refused over maxConnections or maxConnectionsPerAddress.", prometheus.CounterValue)
	mIdleCloses = desc("samsa_broker_idle_closes_total", "Connections closed after serverChannelMaxIdleTimeSeconds of silence.", prometheus.CounterValue)
	mFrameTO    = desc("samsa_broker_frame_timeouts_total", "Connections closed for a frame not completed within frameReadTimeoutMillis.", prometheus.CounterValue)
	mSendErrors = desc("samsa_broker_send_errors_total", "Sends answered with an error code.", prometheus.CounterValue)
	mFlushTO    = desc("samsa_broker_flush_disk_timeouts_total", "Sends answered FLUSH_DISK_TIMEOUT.", prometheus.CounterValue)
	mHeld       = desc("samsa_broker_longpoll_pulls_held", "Pulls held by long polling now.", prometheus.GaugeValue)
	mHeldTotal  = desc("samsa_broker_longpoll_holds_total", "Pulls held by long polling.", prometheus.CounterValue)
	mWoken      = desc("samsa_broker_longpoll_woken_total", "Held pulls answered because a message arrived.", prometheus.CounterValue)
	mExpired    = desc("samsa_broker_longpoll_expired_total", "Held pulls answered at the end of their hold.", prometheus.CounterValue)
	mTopicPuts  = desc("samsa_broker_topic_messages_put_total", "Messages stored, by topic.", prometheus.CounterValue, "topic")
	mTopicGets  = desc("samsa_broker_topic_messages_get_total", "Messages pulled, by topic.", prometheus.CounterValue, "topic")
	mWrittenOff = desc("samsa_store_written_offset_bytes", "CommitLog offset written (visible to readers).", prometheus.GaugeValue)
	mDurableOff = desc("samsa_store_durable_offset_bytes", "CommitLog offset durable (fsynced).", prometheus.GaugeValue)
	mDispOff    = desc("samsa_store_dispatched_offset_bytes", "CommitLog offset dispatched (indexed in the ConsumeQueues).", prometheus.GaugeValue)
	mMinOff     = desc("samsa_store_min_offset_bytes", "CommitLog's oldest offset kept.", prometheus.GaugeValue)
	mDiskRatio  = desc("samsa_store_disk_used_ratio", "Used share (0 to 1) of the file system holding the CommitLog.", prometheus.GaugeValue)
	mBuildInfo  = desc("samsa_build_info", "Always 1; the labels say what runs: the version the broker reports, the Go version, the VCS revision.",
		prometheus.GaugeValue, "version", "goversion", "revision")
	mGroupOff = desc("samsa_broker_consumer_offset", "Committed consumer offset, by group, topic and queue.", prometheus.GaugeValue, "group", "topic", "queue")
	mGroupLag = desc("samsa_broker_consumer_lag_messages", "Messages in the queue past the group's committed offset, by group, topic and queue.",
		prometheus.GaugeValue, "group", "topic", "queue")
	mAppends     = desc("samsa_store_appends_total", "Records appended to the CommitLog.", prometheus.CounterValue)
	mAppendBytes = desc("samsa_store_append_bytes_total", "Record bytes appended to the CommitLog.", prometheus.CounterValue)
	mFsyncs      = desc("samsa_store_fsyncs_total", "Segment fsyncs (fdatasync/msync) issued.", prometheus.CounterValue)
	mFlushes     = desc("samsa_store_flushes_total", "Flusher rounds that made data durable.", prometheus.CounterValue)
	mSegments    = desc("samsa_store_segments", "CommitLog segments on disk.", prometheus.GaugeValue)
	mBroken      = desc("samsa_store_broken", "1 once the store refused further writes after a failed write or fsync.", prometheus.GaugeValue)
	mSkips       = desc("samsa_broker_pull_corrupt_skips_total", "Pulls answered PULL_OFFSET_MOVED past a corrupt record (one per consumer group and record).", prometheus.CounterValue)
	mWaits       = desc("samsa_broker_pull_corrupt_waits_total", "Pulls told to retry at a corrupt record while it is repaired from a peer replica.", prometheus.CounterValue)
	mReadErrs    = desc("samsa_broker_pull_read_errors_total", "Pulls answered SYSTEM_ERROR because the store could not read (a missing or truncated segment file?).", prometheus.CounterValue)
	mDamaged     = desc("samsa_store_damaged_ranges", "Log ranges known damaged and not yet repaired from a peer (such a replica is not elected).", prometheus.GaugeValue)
	mUnverified  = desc("samsa_store_unverified_bytes", "Bytes written before the last start that the store has not yet read back (such a replica is not elected until 0).", prometheus.GaugeValue)
	mRepaired    = desc("samsa_store_repaired_bytes_total", "Bytes of damaged records written back from a peer replica's copy.", prometheus.CounterValue)
	mCutAcked    = desc("samsa_ha_cut_acknowledged_bytes_total", "Bytes this replica cut to follow a new master below what its group acknowledged while it was master: lost acknowledged data (kept in lost+found).", prometheus.CounterValue)
	mCutRecs     = desc("samsa_store_cut_records_total", "Records a replica cut from its log to follow a new master (kept in lost+found).", prometheus.CounterValue)
	mCorrupt     = desc("samsa_store_corrupt_records_total", "Corrupt records reads found since the store opened (each counted once; none is served).", prometheus.CounterValue)
	mRCHits      = desc("samsa_store_read_cache_hits_total", "Pull reads of a CommitLog block found in the read block cache (readBlockCacheMB).", prometheus.CounterValue)
	mRCDirect    = desc("samsa_store_read_cache_direct_total", "Read block cache misses read around the page cache with O_DIRECT (directColdReads).", prometheus.CounterValue)
	mRCMisses    = desc("samsa_store_read_cache_misses_total", "CommitLog blocks read into the read block cache; many per block of the log means the cache is too small for how far apart its consumers read.", prometheus.CounterValue)
	mQuarantined = desc("samsa_store_quarantined_records", "Corrupt records in the store's quarantine, found by this run or an earlier one.", prometheus.GaugeValue)
	mReadOnly    = desc("samsa_store_read_only", "1 while the store refuses appends for lack of space (it leaves that state by itself).", prometheus.GaugeValue)
	mHeldIdx     = desc("samsa_store_dispatch_held", "Records whose ConsumeQueue entry waits for a retry (unreadable until it lands).", prometheus.GaugeValue)
	mXABranches  = desc("samsa_broker_xa_branches", "XA branches held, by state (active: started or ended, not prepared; prepared: durable, waiting for the coordinator).", prometheus.GaugeValue, "state")
	mXALong      = desc("samsa_broker_xa_long_prepared_branches", "XA branches prepared longer than xaLongPrepared (default 1 minute): their coordinator has not decided them (samsa txn list names them); never decided by the broker.", prometheus.GaugeValue)
	mXASettled   = desc("samsa_broker_xa_settled_total", "XA branches committed or rolled back, by outcome.", prometheus.CounterValue, "outcome")
	mDispErrs    = desc("samsa_store_dispatch_errors_total", "ConsumeQueue append attempts that failed (each is retried).", prometheus.CounterValue)
	mFlushLat    = desc("samsa_store_flush_latency_seconds", "Flush round latency (directory sync and segment flushes).", prometheus.UntypedValue)
	mSlaveNA     = desc("samsa_broker_send_slave_not_available_total", "Sends a SYNC_MASTER stored but answered SLAVE_NOT_AVAILABLE.", prometheus.CounterValue)
	mSlaveTO     = desc("samsa_broker_send_flush_slave_timeouts_total", "Sends a SYNC_MASTER stored but answered FLUSH_SLAVE_TIMEOUT.", prometheus.CounterValue)
	mSlaveRef    = desc("samsa_broker_send_refused_as_slave_total", "Sends a slave refused (SERVICE_NOT_AVAILABLE).", prometheus.CounterValue)
	mHASlaveAck  = desc("samsa_ha_slave_ack_offset_bytes", "CommitLog offset each slave reported holding (a master's).", prometheus.GaugeValue, "slave")
	mHASlaveLag  = desc("samsa_ha_slave_behind_bytes", "How far each slave is behind the master's handed offset.", prometheus.GaugeValue, "slave")
	mHASlaveLagT = desc("samsa_ha_slave_lag_seconds", "How long ago the master's log passed each slave's acknowledged offset.", prometheus.GaugeValue, "slave")
	mHASlaveSync = desc("samsa_ha_slave_in_sync", "1 while a SYNC_MASTER waits for the slave.", prometheus.GaugeValue, "slave")
	mSyncRounds  = desc("samsa_broker_slave_sync_rounds_total", "Metadata sync rounds a slave ran against its master.", prometheus.CounterValue)
	mSyncFails   = desc("samsa_broker_slave_sync_failures_total", "Metadata sync rounds that did not copy everything.", prometheus.CounterValue)
	mACLDenied   = desc("samsa_broker_acl_denied_total", "Requests refused by access control (NO_PERMISSION, or a refused admin/HA login), by reason and request.", prometheus.CounterValue, "reason", "code")
	allDescs     = []metricDesc{mACLDenied, mSlaveNA, mSlaveTO, mSlaveRef, mHASlaveAck, mHASlaveLag, mHASlaveLagT, mHASlaveSync, mSyncRounds, mSyncFails,
		mPuts, mGets, mPutBytes, mGetBytes, mRead, mWritten, mFromFile, mConns, mConnsTotal, mRequests,
		mBadFrames, mSendErrors, mFlushTO, mHeld, mHeldTotal, mWoken, mExpired, mTopicPuts, mTopicGets, mWrittenOff, mDurableOff, mDispOff, mMinOff, mDiskRatio, mBuildInfo, mGroupOff, mGroupLag,
		mAnswered, mSendLat, mPullLat,
		mWaits, mReadErrs, mDamaged, mUnverified, mRepaired, mCutRecs, mCutAcked,
		mAppends, mAppendBytes, mFsyncs, mFlushes, mSegments, mBroken, mSkips, mCorrupt, mQuarantined, mRCHits, mRCMisses, mRCDirect,
		mReadOnly, mHeldIdx, mDispErrs, mFlushLat, mRefused, mIdleCloses, mFrameTO, mXABranches, mXALong, mXASettled,
		mPopInFlight, mPopRedelivered, mPopDeadLetters}
)

// flushBuckets are the flush-latency histogram's upper bounds in seconds.
var flushBuckets = []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1}

type brokerCollector struct {
	b *Broker
	m *metrics
}

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d.d
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	s := &c.b.stats
	emit := func(d metricDesc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d.d, d.kind, float64(v), labels...)
	}
	emit(mPuts, s.cmdPut.Load())
	if c.b.xa != nil {
		xs := c.b.xa.Stats()
		emit(mXABranches, int64(xs.Active), "active")
		emit(mXABranches, int64(xs.Prepared), "prepared")
		emit(mXALong, xs.LongPrepared)
		emit(mXASettled, xs.Committed, "commit")
		emit(mXASettled, xs.RolledBack, "rollback")
	}
	emit(mGets, s.cmdGet.Load())
	emit(mPutBytes, s.putBytes.Load())
	emit(mGetBytes, s.getBytes.Load())
	emit(mRead, s.bytesRead.Load())
	emit(mWritten, s.bytesWritten.Load())
	emit(mFromFile, s.sentFromFile.Load())
	emit(mConns, s.currConns.Load())
	emit(mConnsTotal, s.totalConns.Load())
	emit(mRequests, s.requests.Load())
	emit(mBadFrames, s.badFrames.Load())
	emit(mRefused, c.b.refusedConns())
	emit(mIdleCloses, s.idleCloses.Load())
	emit(mFrameTO, s.frameTimeouts.Load())
	emit(mSendErrors, s.sendErrors.Load())
	emit(mFlushTO, s.flushTimeout.Load())
	emit(mHeld, s.held.Load())
	emit(mHeldTotal, s.heldTotal.Load())
	emit(mWoken, s.wokenTotal.Load())
	emit(mExpired, s.expiredTotal.Load())
	emit(mSkips, s.corruptSkips.Load())
	emit(mWaits, s.corruptWaits.Load())
	emit(mReadErrs, s.readErrors.Load())
	emit(mCutAcked, s.cutAcknowledged.Load())
	if c.b.acl != nil {
		for _, d := range c.b.acl.denied.Snapshot() {
			emit(mACLDenied, d.N, d.Reason, d.Code)
		}
	}
	for _, t := range s.topicSnapshot() {
		emit(mTopicPuts, t.Puts, t.Topic)
		emit(mTopicGets, t.Gets, t.Topic)
	}
	emit(mSlaveNA, s.slaveNotAvailable.Load())
	emit(mSlaveTO, s.slaveTimeouts.Load())
	emit(mSlaveRef, s.slaveRefused.Load())
	for _, sl := range c.b.repl.Slaves() {
		emit(mHASlaveAck, sl.AckOffset, sl.Addr)
		emit(mHASlaveLag, sl.Behind, sl.Addr)
		ch <- prometheus.MustNewConstMetric(mHASlaveLagT.d, mHASlaveLagT.kind, sl.LagTime.Seconds(), sl.Addr)
		emit(mHASlaveSync, int64(boolInt(sl.InSync)), sl.Addr)
	}
	if m := c.b.repl.meta; m != nil {
		emit(mSyncRounds, m.rounds.Load())
		emit(mSyncFails, m.failures.Load())
	}
	m := c.b.store.Metrics()
	emit(mWrittenOff, m.WrittenOffset)
	emit(mDurableOff, m.DurableOffset)
	emit(mDispOff, m.DispatchedOffset)
	emit(mMinOff, m.MinOffset)
	if total, free, err := c.b.store.DiskUsage(); err == nil && total > 0 {
		ch <- prometheus.MustNewConstMetric(mDiskRatio.d, mDiskRatio.kind, 1-float64(free)/float64(total))
	}
	ch <- prometheus.MustNewConstMetric(mBuildInfo.d, mBuildInfo.kind, 1, c.b.cfg.Version, runtime.Version(), buildRevision())
	c.collectGroups(emit)
	c.collectPop(emit)
	c.m.req.collect(ch)
	emit(mAppends, m.Appends)
	emit(mAppendBytes, m.AppendBytes)
	emit(mFsyncs, m.Fsyncs)
	emit(mFlushes, m.Flushes)
	emit(mSegments, int64(m.Segments))
	broken := int64(0)
	if m.Broken {
		broken = 1
	}
	emit(mBroken, broken)
	emit(mCorrupt, m.CorruptRecords)
	emit(mDamaged, int64(len(c.b.store.Damaged())))
	emit(mUnverified, c.b.store.Unverified())
	emit(mRepaired, m.RepairedBytes)
	emit(mCutRecs, m.CutRecords)
	emit(mQuarantined, int64(m.Quarantined))
	emit(mRCHits, m.ReadCacheHits)
	emit(mRCMisses, m.ReadCacheMisses)
	emit(mRCDirect, m.ReadCacheDirect)
	readOnly := int64(0)
	if m.ReadOnly {
		readOnly = 1
	}
	emit(mReadOnly, readOnly)
	emit(mHeldIdx, m.DispatchHeld)
	emit(mDispErrs, m.DispatchErrors)
	if h := m.FlushLatency; h != nil {
		buckets := make(map[float64]uint64, len(flushBuckets))
		var count uint64
		var sum float64
		for _, bar := range h.Distribution() {
			if bar.Count == 0 {
				continue
			}
			// A bar's values lie in [From, To] µs; count them at To.
			upper := (time.Duration(bar.To) * time.Microsecond).Seconds()
			count += uint64(bar.Count)
			sum += float64(bar.Count) * (time.Duration(bar.From+bar.To) * time.Microsecond / 2).Seconds()
			for _, ub := range flushBuckets {
				if upper <= ub {
					buckets[ub] += uint64(bar.Count)
				}
			}
		}
		ch <- prometheus.MustNewConstHistogram(mFlushLat.d, count, sum, buckets)
	}
}
