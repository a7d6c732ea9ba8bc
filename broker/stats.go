package broker

import (
	"sort"
	"sync"
	"sync/atomic"
)

// topicCounters are one topic's put and get counts.
type topicCounters struct {
	puts, gets atomic.Int64
	putBytes   atomic.Int64
	getBytes   atomic.Int64
}

// stats are the broker's own counters, read by the text protocol's stats
// command and the Prometheus collector. Every field is safe for concurrent
// use.
type stats struct {
	currConns    atomic.Int64
	totalConns   atomic.Int64
	cmdPut       atomic.Int64 // messages stored
	cmdGet       atomic.Int64 // messages returned by pulls
	putBytes     atomic.Int64 // message body bytes stored
	getBytes     atomic.Int64 // record bytes returned by pulls
	bytesRead    atomic.Int64 // bytes read from clients
	bytesWritten atomic.Int64 // bytes written to clients
	sentFromFile atomic.Int64 // of them, pull records sent from the files (sendfile)
	requests     atomic.Int64
	badFrames    atomic.Int64 // connections closed for a bad frame
	// connections closed for silence (serverChannelMaxIdleTimeSeconds)
	// and for a stalled frame (frameReadTimeoutMillis)
	idleCloses    atomic.Int64
	frameTimeouts atomic.Int64
	sendErrors    atomic.Int64 // sends answered with an error code
	flushTimeout  atomic.Int64 // sends answered FLUSH_DISK_TIMEOUT
	// sends a SYNC_MASTER answered SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT
	slaveNotAvailable atomic.Int64
	slaveTimeouts     atomic.Int64
	slaveRefused      atomic.Int64 // sends a slave refused
	held              atomic.Int64 // long-poll pulls held right now
	heldTotal         atomic.Int64
	wokenTotal        atomic.Int64 // held pulls answered on arrival
	expiredTotal      atomic.Int64 // held pulls answered on deadline
	heldRefused       atomic.Int64 // pulls answered at once, maxHeldPulls being held
	corruptSkips      atomic.Int64 // pulls moved past a corrupt record (handle_pull_corrupt.go)
	corruptWaits      atomic.Int64 // pulls told to retry while a corrupt record is repaired
	readErrors        atomic.Int64 // pulls answered SYSTEM_ERROR: the store could not read
	readErrNote       noteLimiter  // its Error lines, one a minute per distinct error
	cutAcknowledged   atomic.Int64 // bytes a slave cut below its acknowledged mark (ha.AckedMark)
	configSetAside    atomic.Int64 // config files (or copies of them) set aside at load (jsonfile_load.go)

	topics sync.Map // topic → *topicCounters
}

func (s *stats) topic(name string) *topicCounters {
	if v, ok := s.topics.Load(name); ok {
		return v.(*topicCounters)
	}
	v, _ := s.topics.LoadOrStore(name, new(topicCounters))
	return v.(*topicCounters)
}

func (s *stats) put(topic string, msgs, bodyBytes int) {
	s.cmdPut.Add(int64(msgs))
	s.putBytes.Add(int64(bodyBytes))
	t := s.topic(topic)
	t.puts.Add(int64(msgs))
	t.putBytes.Add(int64(bodyBytes))
}

func (s *stats) get(topic string, msgs, bytes int) {
	s.cmdGet.Add(int64(msgs))
	s.getBytes.Add(int64(bytes))
	t := s.topic(topic)
	t.gets.Add(int64(msgs))
	t.getBytes.Add(int64(bytes))
}

// topicStat is a snapshot of one topic's counters.
type topicStat struct {
	Topic                          string
	Puts, Gets, PutBytes, GetBytes int64
}

// topicSnapshot returns every topic's counters, sorted by topic.
func (s *stats) topicSnapshot() []topicStat {
	var out []topicStat
	s.topics.Range(func(k, v any) bool {
		c := v.(*topicCounters)
		out = append(out, topicStat{Topic: k.(string), Puts: c.puts.Load(), Gets: c.gets.Load(),
			PutBytes: c.putBytes.Load(), GetBytes: c.getBytes.Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}
