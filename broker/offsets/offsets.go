package offsets

import (
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
	"github.com/samsamq/samsa/storage/vfs"
)

// FileName is the table's file in Config.ConfigDir.
const FileName = "consumerOffset.json"

// Defaults.
const (
	// DefaultSaveInterval is RocketMQ's flushConsumerOffsetInterval.
	DefaultSaveInterval = 5 * time.Second
	// DefaultMaxBytes bounds the table so that GET_ALL_CONSUMER_OFFSET's
	// answer (what a slave copies) fits a frame: some 250,000 queues.
	DefaultMaxBytes = 8 << 20
)

// Store is what the start-offset rule and ByTime need of the log.
// *storage.Store has it.
type Store interface {
	// MinQueueOffset is the first offset still stored: a queue that no
	// longer starts at 0 is never started at 0.
	MinQueueOffset(topic string, queueID int32) int64
	// MaxQueueOffset is the next offset the queue will assign: 0 is an
	// empty queue.
	MaxQueueOffset(topic string, queueID int32) int64
	// EarliestStoreTime is the store time (Unix ms) of the queue's first
	// message, compared with the group's birth.
	EarliestStoreTime(topic string, queueID int32) (int64, error)
	// OffsetByTime is the first offset stored at or after unixMs:
	// MinQueueOffset when every message is, MaxQueueOffset when none is.
	OffsetByTime(topic string, queueID int32, unixMs int64) int64
}

// Config is what a Table needs. FS and ConfigDir are required; Store is
// for Start; the rest has defaults. The broker maps its settings onto it
// (the property names in brackets).
type Config struct {
	FS vfs.FS
	// ConfigDir holds consumerOffset.json (the broker's
	// StorePathRootDir/config).
	ConfigDir string
	// Store answers Start's questions about a queue. nil: Start answers
	// only committed offsets.
	Store Store
	// Slave says whether this broker is a slave now: its commits are then
	// kept as local too, until its master takes them (Sync). nil: a
	// master for good, which keeps nothing local and drops a slave's
	// leftovers from the file. A static slave passes a func that is
	// always true; a controller-mode replica, one that follows its role.
	Slave func() bool
	// Born returns when group's current run began (the first heartbeat
	// of its first member since it last had none); false when it has no
	// member on this broker. nil: no group is ever live.
	Born func(group string) (time.Time, bool)
	// CheckNames checks a topic and a group name (the broker's
	// ValidateTopic and ValidateGroup): entries of the file or of a
	// master's table that fail it are dropped. nil: any non-empty names.
	CheckNames func(topic, group string) error
	// SaveInterval (flushConsumerOffsetInterval): how often Run saves the
	// table when it changed. Default 5 s. A crash loses the commits made
	// since the last save; consumers then read those messages again.
	SaveInterval time.Duration
	// MaxBytes bounds the table's JSON, estimated generously (KeyBytes per
	// topic@group, QueueBytes per queue): a commit that would add past it
	// is refused (ErrTableFull). Default DefaultMaxBytes.
	MaxBytes int
	// Now stamps the names of files set aside. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger // default slog.Default()
	// FilesSetAside, if set, counts the config files set aside because
	// they did not load (the broker's config_files_set_aside).
	FilesSetAside *atomic.Int64
}

// Key is one queue of a group's: what an offset is kept for.
type Key struct {
	Topic, Group string
	Queue        int32
}

// pair is a (topic, group): one "topic@group" of the file.
type pair struct{ topic, group string }

func (k Key) pair() pair { return pair{k.Topic, k.Group} }

// Table is the committed consumer offsets: the table, its file and, on a
// slave, the commits its master has not taken yet. See the package doc.
type Table struct {
	cfg    Config
	file   jsonfile.File
	saveMu sync.Mutex // one save at a time (jsonfile)
	mu     struct {
		sync.RWMutex
		table map[pair]map[int32]int64
		// bytes estimates the table's JSON: KeyBytes per pair, QueueBytes
		// per queue.
		bytes int
		dirty bool
		// local: the offsets committed while a slave and not yet taken by
		// the master; nil without Config.Slave.
		local map[Key]int64
	}
}

// Open checks cfg and loads consumerOffset.json. A file that does not
// load never keeps the broker from starting (package doc, "File"): the
// error is for a Config without FS or ConfigDir.
func Open(cfg Config) (*Table, error) {
	if cfg.FS == nil || cfg.ConfigDir == "" {
		return nil, errors.New("offsets: FS and ConfigDir are required")
	}
	if cfg.SaveInterval <= 0 {
		cfg.SaveInterval = DefaultSaveInterval
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Born == nil {
		cfg.Born = func(string) (time.Time, bool) { return time.Time{}, false }
	}
	if cfg.CheckNames == nil {
		cfg.CheckNames = nonEmpty
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &Table{cfg: cfg, file: jsonfile.File{FS: cfg.FS, Path: filepath.Join(cfg.ConfigDir, FileName),
		Report: &jsonfile.Report{Log: cfg.Logger, Now: cfg.Now, SetAside: cfg.FilesSetAside}}}
	t.mu.table = make(map[pair]map[int32]int64)
	if cfg.Slave != nil {
		t.mu.local = make(map[Key]int64)
	}
	t.load()
	return t, nil
}

func nonEmpty(topic, group string) error {
	if topic == "" || group == "" {
		return errors.New("empty name")
	}
	return nil
}
