package txn

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/internal/jsonfile"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

// System topics, properties and the progress group (RocketMQ's
// TopicValidator, MessageConst, TransactionalMessageUtil).
const (
	// HalfTopic holds the half messages (queue 0).
	HalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// OpHalfTopic holds the op records that settle them (queue 0).
	OpHalfTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// CheckMaxTimeTopic receives a copy of each half discarded after its
	// check-backs.
	CheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// ProgressGroup is the consumer group whose offsets on HalfTopic and
	// OpHalfTopic are the check progress (Config.Progress).
	ProgressGroup = "CID_RMQ_SYS_TRANS"
	opTag         = "d"

	// PropTranPrepared=true marks a prepared send (IsPrepared).
	PropTranPrepared = "TRAN_MSG"
	// PropProducerGroup names a half's producer group: the group a
	// check-back goes to and the only one whose END_TRANSACTION settles it.
	PropProducerGroup = "PGROUP"
	// PropSamsaTransaction (ours): the transaction id shared by the half
	// messages of one transaction of Samsa's client.
	PropSamsaTransaction = "SAMSA_TXN_ID"

	propUniqKey          = "UNIQ_KEY"
	propTransactionID    = "__transactionId__"
	propCheckImmunity    = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	propPreparedQueueOff = "TRAN_PREPARED_QUEUE_OFFSET"
	propCheckTimes       = "TRANSACTION_CHECK_TIMES"
	propRealTopic        = "REAL_TOPIC"
	propRealQueueID      = "REAL_QID"
)

// Defaults (RocketMQ's BrokerConfig).
const (
	DefaultTimeout       = 6 * time.Second
	DefaultCheckInterval = 30 * time.Second
	DefaultCheckMax      = 15
)

// checkBatch bounds the open half messages one check round looks at (the
// oldest; the rest wait for the next round).
const checkBatch = 100_000

// Store is what transactions need of the log. *storage.Store has it.
type Store interface {
	// GetMessages reads the half and op queues, and a real queue when a
	// crash may have left a final message there.
	GetMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int,
		tagFilter func(tagsCode int64) bool) (storage.GetResult, error)
	// MinQueueOffset and MaxQueueOffset bound a queue: the saved progress
	// is clamped into the half and op queues'.
	MinQueueOffset(topic string, queueID int32) int64
	MaxQueueOffset(topic string, queueID int32) int64
	// OffsetByTime is where a real queue is searched from.
	OffsetByTime(topic string, queueID int32, unixMs int64) int64
	// ReadAt reads the half an END_TRANSACTION names by its commit-log
	// offset.
	ReadAt(physOffset int64, size int32) ([]byte, error)
	// SegmentSize and HandedOffset bound the first, guessed read of a
	// half: within its segment and the log written so far.
	SegmentSize() int64
	HandedOffset() int64
	// AppendBatch stores a settlement when Config.Append is nil.
	AppendBatch(ctx context.Context, msgs []*storage.Message) ([]storage.AppendResult, error)
}

// Progress is where the check progress is kept: ProgressGroup's offsets on
// HalfTopic and OpHalfTopic queue 0 (the broker's consumer offsets, which
// follow the master to its slaves).
type Progress interface {
	// Query returns the saved offset on topic; ok is false when there is
	// none.
	Query(topic string) (off int64, ok bool)
	// Commit saves it (the broker's offset flusher writes it out).
	Commit(topic string, off int64)
}

// Producer is a live producer connection a check-back can go to.
type Producer interface {
	// RequestOneway queues a one-way request to the producer and reports
	// whether it was taken (false: its write queue is full).
	RequestOneway(cmd *protocol.Command) bool
}

// Config is what a Service needs. Store, FS, ConfigDir and Progress are
// required; zero durations and counts take their defaults. The broker maps
// its settings onto it (the property names in brackets).
type Config struct {
	Store Store
	FS    vfs.FS
	// ConfigDir holds transactionChecks.json (the broker's
	// StorePathRootDir/config).
	ConfigDir string
	Progress  Progress
	// Timeout (transactionTimeOut): a half younger than this is not
	// checked back. Default 6 s.
	Timeout time.Duration
	// CheckInterval (transactionCheckInterval): how often Run runs a
	// check round. Default 30 s.
	CheckInterval time.Duration
	// CheckMax (transactionCheckMax): check-backs per half before it is
	// discarded to CheckMaxTimeTopic. Default 15.
	CheckMax int
	// FileReserved (fileReservedTime): an open half older than this is
	// discarded whatever its check count. Zero: never for its age.
	FileReserved time.Duration
	// BrokerName names this broker in CHECK_TRANSACTION_STATE.
	BrokerName string
	// StoreHost is the address stamped in the records the Service writes
	// and named in a check-back's offsetMsgId; a func because the broker
	// learns its port when it starts. Default the zero address.
	StoreHost func() netip.AddrPort
	// Producers returns the live connections of a producer group, the
	// ones a check-back may go to. nil: nobody is ever online.
	Producers func(group string) []Producer
	// Append stores a settlement's messages in this order (the broker's
	// append combiner among concurrent sends). It may store some and not
	// others: then errs has each message's error, else errs is nil; err is
	// the first. nil: Store.AppendBatch, all or nothing.
	Append func(msgs []*storage.Message) (res []storage.AppendResult, errs []error, err error)
	// Master reports whether this broker may write now: a controller-mode
	// replica that is not master skips its check rounds. nil: always.
	Master func() bool
	// Hold, if set, is asked about each open half a check round would
	// check back or discard, with its properties: true leaves it alone,
	// as its owner settles it (package xa: a half of a known XA branch,
	// which only its coordinator decides). nil: no half is held.
	Hold func(props []byte) bool
	// Now is the clock that ages the half messages. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger // default slog.Default()
	// FilesSetAside, if set, counts the config files set aside because
	// they did not load (the broker's config_files_set_aside).
	FilesSetAside *atomic.Int64
}

// Service is a master's transactions: the state of its half messages and
// the check-back. See the package doc.
type Service struct {
	cfg Config
	st  atomic.Pointer[txnState] // replaced whole by Resync
}

func (s *Service) state() *txnState { return s.st.Load() }

// Resync rebuilds the state of the half messages from the store, as New
// does. A replica that becomes master calls it before it takes writes:
// the half messages and op records it received by replication while a
// slave never passed through its state, and a half settled there would
// otherwise look open (a check-back, and a second final message if the
// producer answers commit again).
func (s *Service) Resync() error { return s.rebuild() }

// New checks cfg and rebuilds the state of the half messages from the
// progress and the op queue (the package doc's "Progress"). The broker
// calls it once the store is open, before anything is served; nothing
// runs until Run.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.FS == nil || cfg.ConfigDir == "" || cfg.Progress == nil {
		return nil, errors.New("txn: Store, FS, ConfigDir and Progress are required")
	}
	setDefault(&cfg.Timeout, DefaultTimeout)
	setDefault(&cfg.CheckInterval, DefaultCheckInterval)
	setDefault(&cfg.CheckMax, DefaultCheckMax)
	if cfg.StoreHost == nil {
		cfg.StoreHost = func() netip.AddrPort { return netip.AddrPort{} }
	}
	if cfg.Producers == nil {
		cfg.Producers = func(string) []Producer { return nil }
	}
	if cfg.Append == nil {
		st := cfg.Store
		cfg.Append = func(msgs []*storage.Message) ([]storage.AppendResult, []error, error) {
			res, err := st.AppendBatch(context.Background(), msgs)
			return res, nil, err
		}
	}
	if cfg.Master == nil {
		cfg.Master = func() bool { return true }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{cfg: cfg}
	if err := s.rebuild(); err != nil {
		return nil, err
	}
	return s, nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Run runs a check round every Config.CheckInterval until stop closes
// (RocketMQ's TransactionalMessageCheckService). It owns nothing but its
// ticker and the rounds.
func (s *Service) Run(stop <-chan struct{}) {
	t := time.NewTicker(s.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if !s.cfg.Master() { // a controller-mode broker not master now: its log takes only the master's
				continue
			}
			s.round(stop)
		}
	}
}

// checksFile holds the check counts of open half messages.
func (s *Service) checksFile() jsonfile.File {
	return jsonfile.File{FS: s.cfg.FS, Path: filepath.Join(s.cfg.ConfigDir, "transactionChecks.json"),
		Report: &jsonfile.Report{Log: s.cfg.Logger, Now: s.cfg.Now, SetAside: s.cfg.FilesSetAside}}
}
