package delay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

// Delayed delivery's system topics (RocketMQ's TopicValidator and
// TimerMessageStore).
const (
	// ScheduleTopic holds delay-level messages until due: queue level-1.
	ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
	// TimerTopic holds timer messages until the timer loop has put them
	// in its wheel (queue 0).
	TimerTopic = "rmq_sys_wheel_timer"
	// MaxLevels is the schedule topic's queue count (RocketMQ's
	// SCHEDULE_TOPIC_QUEUE_NUM): the most delay levels there can be.
	MaxLevels = 18
)

// Store is what delayed delivery needs of the log. *storage.Store has it.
type Store interface {
	// GetMessages reads a schedule or timer queue from offset.
	GetMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int,
		tagFilter func(tagsCode int64) bool) (storage.GetResult, error)
	// MinQueueOffset and MaxQueueOffset bound a queue: a level's saved
	// offset is clamped into its queue's.
	MinQueueOffset(topic string, queueID int32) int64
	MaxQueueOffset(topic string, queueID int32) int64
	// ReadAt reads a timer's record, which the wheel names by its
	// CommitLog offset and size.
	ReadAt(physOffset int64, size int32) ([]byte, error)
	// AppendBatch stores due copies in their real topics.
	AppendBatch(ctx context.Context, msgs []*storage.Message) ([]storage.AppendResult, error)
	// FlushTo makes the log durable up to off: the delivered copies,
	// before progress past them is saved.
	FlushTo(ctx context.Context, off int64) error
}

// Config is what a Service needs. Store, FS, ConfigDir and Levels are
// required; zero durations and sizes take their defaults. The broker maps
// its ScheduleConfig onto it (the property names in brackets).
type Config struct {
	Store Store
	FS    vfs.FS
	// ConfigDir holds delayOffset.json and timerCheckpoint.json (the
	// broker's StorePathRootDir/config).
	ConfigDir string
	// TimerDir holds the timer wheel's files (the broker's
	// StorePathRootDir/timerwheel), made on the first timer message.
	TimerDir string
	// Levels (messageDelayLevel) is the delay of each level (ParseLevels).
	Levels string
	// SaveInterval (flushDelayOffsetInterval): how often the levels'
	// progress is saved, after the copies it covers are flushed. Default
	// 10 s. A crash delivers again what was delivered since the last save.
	SaveInterval time.Duration
	// Timers (timerWheelEnable): accept and deliver timer messages; off,
	// Defer refuses them (ErrTimersOff).
	Timers bool
	// TimerMaxDelaySec (timerMaxDelaySec): the furthest a timer may
	// point ahead. Default 3 days.
	TimerMaxDelaySec int
	// TimerPrecisionMs (timerPrecisionMs): the width of one wheel slot.
	// Default 100.
	TimerPrecisionMs int
	// TimerFlushInterval (timerFlushIntervalMs): how often the timer log
	// and wheel are flushed and the checkpoint written. Default 1 s.
	TimerFlushInterval time.Duration
	// MaxBatchBytes bounds one AppendBatch of delivered copies: the store
	// writes a batch into one CommitLog segment. Default 1 MiB.
	MaxBatchBytes int
	// Slave: nothing runs and Close saves nothing; the progress is the
	// master's, copied with AdoptOffsets and AdoptTimerCheckpoint.
	Slave bool
	// Now is the clock that decides what is due. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger // default slog.Default()
	// Delivered, if set, is told of each copy stored in its real topic
	// (the broker counts it as a put).
	Delivered func(topic string, bodyBytes int)
	// FilesSetAside, if set, counts the config files set aside because
	// they did not load (the broker's config_files_set_aside).
	FilesSetAside *atomic.Int64
}

// Service is delayed delivery: the delay levels and, with Config.Timers,
// the timer wheel. See the package doc.
type Service struct {
	cfg    Config
	levels []time.Duration // level i+1 waits levels[i]
	sched  *schedule
	timers *timers // nil without Config.Timers
}

// New checks cfg, loads the levels' progress (delayOffset.json) and
// returns a Service that runs nothing until Run.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.FS == nil || cfg.ConfigDir == "" {
		return nil, errors.New("delay: Store, FS and ConfigDir are required")
	}
	levels, err := ParseLevels(cfg.Levels)
	if err != nil {
		return nil, fmt.Errorf("delay: messageDelayLevel: %w", err)
	}
	if cfg.Timers && cfg.TimerDir == "" {
		return nil, errors.New("delay: TimerDir is required with Timers")
	}
	setDefault(&cfg.SaveInterval, 10*time.Second)
	setDefault(&cfg.TimerMaxDelaySec, 3*24*3600)
	setDefault(&cfg.TimerPrecisionMs, 100)
	setDefault(&cfg.TimerFlushInterval, time.Second)
	setDefault(&cfg.MaxBatchBytes, 1<<20)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Delivered == nil {
		cfg.Delivered = func(string, int) {}
	}
	s := &Service{cfg: cfg, levels: levels}
	if s.sched, err = newSchedule(&s.cfg, levels); err != nil {
		return nil, err
	}
	if cfg.Timers {
		s.timers = newTimers(&s.cfg)
	}
	return s, nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Levels is the number of delay levels.
func (s *Service) Levels() int { return len(s.levels) }

// Timers reports whether timer messages are on (Config.Timers).
func (s *Service) Timers() bool { return s.timers != nil }

// OnDispatch wakes the loop whose queue got a record; the broker
// registers it with the store (Store.OnDispatch). It does not block.
func (s *Service) OnDispatch(topic string, queue int32, off int64) {
	s.sched.onDispatch(topic, queue, off)
	if s.timers != nil {
		s.timers.onDispatch(topic, queue, off)
	}
}

// Run delivers until stop closes: one goroutine per level, the saver of
// their progress and the timer loop. It returns once they all have; on a
// slave at once.
func (s *Service) Run(stop <-chan struct{}) {
	if s.cfg.Slave {
		return
	}
	s.sched.correct()
	var wg sync.WaitGroup
	for i := range s.levels {
		wg.Go(func() { s.sched.runLevel(i+1, stop) })
	}
	wg.Go(func() { s.sched.runSaver(stop) })
	if s.timers != nil {
		wg.Go(func() { s.timers.run(stop) })
	}
	wg.Wait()
}

// Close saves the progress once Run has returned (or when it never ran):
// the levels' offsets (not on a slave) and the timer wheel's clean
// checkpoint. The Service is not used after.
func (s *Service) Close() error {
	var err error
	if !s.cfg.Slave {
		if e := s.sched.save(); e != nil {
			err = fmt.Errorf("broker: save delayOffset.json: %w", e)
		}
	}
	if s.timers != nil {
		if e := s.timers.close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}
