package broker

import (
	"github.com/samsamq/samsa/broker/pop"
	"time"

	"github.com/samsamq/samsa/broker/offsets"
	"github.com/samsamq/samsa/storage"
)

// mqadminRequests answer what RocketMQ's mqadmin asks a broker beyond the
// client protocol (RocketMQ's AdminBrokerProcessor): topic and consume
// stats, a group's connections, the configuration, run-time figures and
// the first step of an offset reset, one file each (mqadmin_*.go). They
// read the broker's tables and change none of them.
// popStats is what the admin answers read of package pop.
type popStats interface {
	// QueueStats is group's state on each queue of topic it popped.
	QueueStats(group, topic string) map[int32]pop.QueueStat
	// Topics lists the topics group popped.
	Topics(group string) []string
}

type mqadminRequests struct {
	cfg     *Config // read only
	store   *storage.Store
	offsets *offsets.Table
	topics  *topicManager
	clients *clientManager
	stats   *stats
	rates   *rateSampler
	now     func() time.Time
	ans     answers
	// pop is POP's state (nil on a slave), read by GET_CONSUME_STATS.
	pop popStats
	// started is when the broker started (Start sets it before anything
	// is read).
	started time.Time
}
