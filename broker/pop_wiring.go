package broker

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/broker/delay"
	"github.com/samsamq/samsa/broker/pop"
)

// POP consumption lives in package broker/pop; this file is its wiring.

// openPop makes the POP service (New, on a master): its write-ahead file
// is StorePathRootDir/pop/pop.wal; it hears of every dispatch to wake
// waiting pops. A slave has none (POP is answered there with an error:
// the in-flight state does not replicate; each queue's floor does, as the
// group's consumer offset, so a replica elected master hands out again
// only what was in flight).
func (b *Broker) openPop() error {
	c := &b.cfg
	pc := pop.Config{
		Store:      b.store,
		FS:         c.FS,
		Dir:        filepath.Join(c.StorePathRootDir, "pop"),
		BrokerName: c.BrokerName,
		Now:        c.Clock,
		Logger:     b.log,
		MaxReconsume: func(group string) int32 {
			if g := b.groups.find(group); g.RetryMaxTimes > 0 {
				return g.RetryMaxTimes
			}
			return int32(c.MaxReconsumeTimes)
		},
		DLQ: func(group string) (string, error) {
			topic := DLQGroupPrefix + group
			if _, created, err := b.topics.createIfMissing(topic, 1, PermRead|PermWrite); err != nil {
				return "", fmt.Errorf("create %s: %w", topic, err)
			} else if created {
				b.reg.topicsChanged()
			}
			return topic, nil
		},
		MaxHeld: c.MaxHeldPulls,
		// Each queue's floor goes to the offset table, which slaves copy:
		// a replica elected master starts the group there (progress.go).
		Committed: b.offsets.Query,
		Commit:    b.offsets.Commit,
	}
	levels, err := delay.ParseLevels(c.MessageDelayLevel)
	if err != nil {
		return fmt.Errorf("messageDelayLevel: %w", err)
	}
	pc.Backoff = popBackoff(levels)
	if c.FlushDiskType == AsyncFlush {
		// as the CommitLog: written before the answer, synced in the background
		pc.SyncInterval = c.FlushIntervalCommitLog
	}
	p, err := pop.New(pc)
	if err != nil {
		return err
	}
	b.pop = p
	b.store.OnDispatch(p.OnDispatch)
	return nil
}

// popBackoff spaces a POP message's attempts on the retry ladder
// (messageDelayLevel): its first attempt again comes when its invisible
// time ends, the k-th (k >= 2) that long plus level k+1 (10 s, 30 s, 1 m, ...
// by default), the last level past the end. RocketMQ's retry of a push
// consumer's k-th attempt waits level k+2; POP's invisible time is the
// first step.
func popBackoff(levels []time.Duration) func(int32) time.Duration {
	return func(times int32) time.Duration {
		if times < 2 {
			return 0
		}
		return levels[min(int(times), len(levels)-1)]
	}
}

// popRefusesPull answers a pull by a group that consumes the topic by
// POP: mixing the two would hand the same messages out twice.
func (b *Broker) popRefusesPull(group, topic string) bool {
	return b.pop != nil && b.pop.Uses(group, topic)
}
