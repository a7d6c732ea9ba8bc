package broker

import (
	"bufio"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/samsamq/samsa/protocol/metaq"
)

// The text protocol (MetaQ's, memcached-style) shares the remoting port: a
// connection whose first byte is an ASCII letter sends lines ending "\r\n"
// (a bare "\n" is accepted). MetaQ's commands (package protocol/metaq for
// the syntax, broker/metaq for put, get and offset) carry an opaque and
// are answered "result"/"value" by it, out of order when pipelined
// (text_conn.go):
//
//	put <topic> <partition> <len> <flag> [<checksum>] <opaque>\r\n<value>
//	get <topic> <group> <partition> <offset> <maxSize> <opaque>
//	offset <topic> <group> <partition> <offset> <opaque>
//	stats [item] [<opaque>]
//	               without opaque: STAT <name> <value> lines, then END;
//	               with one: result 200 <len> <opaque> and the same lines.
//	               Items: (none) everything; "topics" per-topic counts;
//	               "store" the store's offsets and flush figures; "ha"
//	               the role, the slaves (on a master) or the master and
//	               the metadata sync (on a slave); "schedule" the delay
//	               levels' and the timer wheel's progress; "acl".
//	version [<opaque>]
//	               VERSION <version>, or result 200 <len> <opaque> <version>
//	quit           closes the connection (after the answers in flight)
//	auth <accessKey> <secretKey>
//	               with aclEnable=true, the first line: an admin
//	               account's keys (OK, or CLIENT_ERROR and close). Only
//	               version and quit go without it.
//
// Anything else gets ERROR. A line longer than maxTextLine closes the
// connection.
const maxTextLine = metaq.MaxLine

// isTextStart reports whether a connection's first byte starts a text
// command. A remoting frame starts with its length's high byte, which is
// below 0x41 for every frame under 1 GiB.
func isTextStart(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// statLine is one STAT line.
type statLine struct {
	name  string
	value any
}

// writeStats writes the STAT lines of item and END; false for an unknown
// item (nothing written).
func (b *Broker) writeStats(w *bufio.Writer, item string) bool {
	var lines []statLine
	switch item {
	case "":
		lines = append(b.generalStats(), b.topicStats()...)
		lines = append(lines, b.storeStats()...)
		lines = append(lines, b.repl.haStats()...)
		lines = append(lines, delayStats(b.delay)...)
		lines = append(lines, b.aclStats()...)
	case "schedule":
		lines = delayStats(b.delay)
	case "acl":
		lines = b.aclStats()
	case "ha":
		lines = b.repl.haStats()
	case "topics":
		lines = b.topicStats()
	case "store":
		lines = b.storeStats()
	default:
		return false
	}
	for _, l := range lines {
		_, _ = fmt.Fprintf(w, "STAT %s %v\r\n", l.name, l.value)
	}
	_, _ = fmt.Fprintf(w, "END\r\n")
	return true
}

func (b *Broker) generalStats() []statLine {
	s := &b.stats
	pg, cg, clients := b.clients.counts()
	return []statLine{
		{"pid", b.pid},
		{"uptime", int64(b.cfg.Clock().Sub(b.started).Seconds())},
		{"time", b.cfg.Clock().Unix()},
		{"version", b.cfg.Version},
		{"broker_name", b.cfg.BrokerName},
		{"broker_id", b.cfg.BrokerID},
		{"broker_role", string(b.cfg.BrokerRole)},
		{"cluster", b.cfg.BrokerClusterName},
		{"curr_connections", s.currConns.Load()},
		{"total_connections", s.totalConns.Load()},
		{"cmd_put", s.cmdPut.Load()},
		{"cmd_get", s.cmdGet.Load()},
		{"bytes_put", s.putBytes.Load()},
		{"bytes_get", s.getBytes.Load()},
		{"bytes_read", s.bytesRead.Load()},
		{"bytes_written", s.bytesWritten.Load()},
		{"requests", s.requests.Load()},
		{"bad_frames", s.badFrames.Load()},
		{"refused_connections", b.refusedConns()},
		{"idle_closes", s.idleCloses.Load()},
		{"frame_timeouts", s.frameTimeouts.Load()},
		{"send_errors", s.sendErrors.Load()},
		{"flush_timeouts", s.flushTimeout.Load()},
		{"longpoll_held", s.held.Load()},
		{"longpoll_woken", s.wokenTotal.Load()},
		{"longpoll_expired", s.expiredTotal.Load()},
		{"longpoll_refused", s.heldRefused.Load()},
		{"pull_corrupt_skips", s.corruptSkips.Load()},
		{"pull_corrupt_waits", s.corruptWaits.Load()},
		{"pull_read_errors", s.readErrors.Load()},
		{"store_damaged_ranges", len(b.store.Damaged())},
		{"store_unverified_bytes", b.store.Unverified()},
		{"ha_cut_acknowledged_bytes", s.cutAcknowledged.Load()},
		{"config_files_set_aside", s.configSetAside.Load()},
		{"acl_denied", b.acl.deniedTotal()},
		{"producer_groups", pg},
		{"consumer_groups", cg},
		{"clients", clients},
		{"topics", b.topics.count()},
		{"register_full", b.reg.stats.full.Load()},
		{"register_incremental", b.reg.stats.incremental.Load()},
		{"register_queries", b.reg.stats.queries.Load()},
		{"register_frames", b.reg.stats.frames.Load()},
		{"register_bytes", b.reg.stats.bytes.Load()},
	}
}

func (b *Broker) topicStats() []statLine {
	var lines []statLine
	for _, t := range b.stats.topicSnapshot() {
		lines = append(lines,
			statLine{"topic:" + t.Topic + ":put", t.Puts},
			statLine{"topic:" + t.Topic + ":get", t.Gets},
			statLine{"topic:" + t.Topic + ":put_bytes", t.PutBytes},
			statLine{"topic:" + t.Topic + ":get_bytes", t.GetBytes})
	}
	return lines
}

func (b *Broker) storeStats() []statLine {
	m := b.store.Metrics()
	return []statLine{
		{"store_written_offset", m.WrittenOffset},
		{"store_handed_offset", m.HandedOffset},
		{"store_durable_offset", m.DurableOffset},
		{"store_dispatched_offset", m.DispatchedOffset},
		{"store_min_offset", m.MinOffset},
		{"store_appends", m.Appends},
		{"store_append_bytes", m.AppendBytes},
		{"store_fsyncs", m.Fsyncs},
		{"store_corrupt_records", m.CorruptRecords},
		{"store_quarantined", m.Quarantined},
		{"store_read_cache_hits", m.ReadCacheHits},
		{"store_read_cache_misses", m.ReadCacheMisses},
		{"store_read_cache_direct", m.ReadCacheDirect},
		{"store_avg_batch", fmt.Sprintf("%.2f", m.AvgBatch)},
		{"store_flushes", m.Flushes},
		{"store_flush_p50_us", m.FlushP50.Microseconds()},
		{"store_flush_p99_us", m.FlushP99.Microseconds()},
		{"store_flush_max_us", m.FlushMax.Microseconds()},
		{"store_segments", m.Segments},
		{"store_broken", m.Broken},
		{"store_read_only", m.ReadOnly},
		{"store_dispatch_held", m.DispatchHeld},
		{"store_dispatch_errors", m.DispatchErrors},
		{"store_backend", b.cfg.StoreBackend},
		{"store_flush_type", string(b.cfg.FlushDiskType)},
		{"store_durability", b.store.Options().Durability().String()},
		{"store_write_outs", m.WriteOuts},
	}
}

// countingWriter counts bytes written to w.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
