package broker

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/samsamq/samsa/acl"
)

// The text protocol (MetaQ's, memcached-style) shares the remoting port: a
// connection whose first byte is an ASCII letter sends lines ending "\r\n"
// (a bare "\n" is accepted):
//
//	stats [item]   STAT <name> <value> lines, then END. Items: (none)
//	               everything; "topics" per-topic counts; "store" the
//	               store's offsets and flush figures; "ha" the role,
//	               the slaves (on a master) or the master and the
//	               metadata sync (on a slave); "schedule" the delay
//	               levels' and the timer wheel's progress.
//	version        VERSION <version>
//	quit           closes the connection
//	auth <accessKey> <secretKey>
//	               with aclEnable=true, the first line: an admin
//	               account's keys (OK, or CLIENT_ERROR and close)
//
// Anything else gets ERROR. A line longer than maxTextLine closes the
// connection.
const maxTextLine = 1024

// isTextStart reports whether a connection's first byte starts a text
// command. A remoting frame starts with its length's high byte, which is
// below 0x41 for every frame under 1 GiB.
func isTextStart(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// serveText runs a text connection until quit, EOF or a bad line. It
// writes synchronously: a text client waits for each answer. Answers go
// to a bufio.Writer, whose first write error sticks: the Flush after each
// answer reports it (the writes' own errors are dropped).
func (c *conn) serveText() {
	w := bufio.NewWriter(countingWriter{c.nc, &c.b.stats.bytesWritten})
	authed := false // with ACL on: an admin account sent auth
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull || len(line) > maxTextLine {
				_, _ = fmt.Fprintf(w, "CLIENT_ERROR line too long\r\n")
				_ = w.Flush() // the connection closes next either way
			} else {
				c.timedOut(err)
			}
			return
		}
		c.dl.Boundary(c.br.Buffered()) // a line is a frame: idle and partial-line timeouts
		if len(line) > maxTextLine {
			_, _ = fmt.Fprintf(w, "CLIENT_ERROR line too long\r\n")
			_ = w.Flush() // the connection closes next either way
			return
		}
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		cmd := strings.ToLower(fields[0])
		if c.b.acl != nil && cmd != "quit" && !authed {
			if authed = c.textAuth(w, fields); !authed {
				return
			}
			if cmd == "auth" {
				if w.Flush() != nil {
					return
				}
				continue
			}
		}
		switch cmd {
		case "quit":
			return
		case "auth":
			// ACL off (or already authenticated): nothing to check, so a
			// client with credentials works against any broker.
			_, _ = fmt.Fprintf(w, "OK\r\n")
		case "version":
			_, _ = fmt.Fprintf(w, "VERSION %s\r\n", c.b.cfg.Version)
		case "stats":
			item := ""
			if len(fields) > 1 {
				item = strings.ToLower(fields[1])
			}
			if !c.b.writeStats(w, item) {
				_, _ = fmt.Fprintf(w, "CLIENT_ERROR unknown stats item %q\r\n", item)
			}
		default:
			_, _ = fmt.Fprintf(w, "ERROR\r\n")
		}
		if w.Flush() != nil {
			return
		}
	}
}

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
		{"topics", len(b.topics.names())},
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

// textAuth checks an auth line (ACL on): an admin account's keys. It
// answers OK, or CLIENT_ERROR (counted) and reports false: the connection
// then closes.
func (c *conn) textAuth(w *bufio.Writer, fields []string) bool {
	if strings.ToLower(fields[0]) == "auth" && len(fields) == 3 && c.b.acl.adminCredentials(fields[1], fields[2]) {
		_, _ = fmt.Fprintf(w, "OK\r\n")
		return true
	}
	c.b.acl.denied.Add(acl.ReasonAdminAuth, 0)
	_, _ = fmt.Fprintf(w, "CLIENT_ERROR access denied: ACL is on; send \"auth <accessKey> <secretKey>\" of an admin account first\r\n")
	_ = w.Flush() // the connection closes next either way
	return false
}
