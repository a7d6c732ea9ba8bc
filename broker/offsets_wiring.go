package broker

import (
	"github.com/samsamq/samsa/broker/offsets"
)

// Consumer offsets live in package broker/offsets; this file is their
// wiring.

// openOffsets loads the committed consumer offsets (offsets.Open; a file
// that does not load never keeps the broker from starting). New calls it
// once the store is open; Start runs its periodic save, Close saves once
// more.
func (b *Broker) openOffsets() error {
	c := &b.cfg
	cfg := offsets.Config{
		FS:            c.FS,
		ConfigDir:     c.ConfigDir(),
		Store:         b.store,
		Born:          b.clients.born,
		CheckNames:    checkOffsetNames,
		SaveInterval:  c.FlushConsumerOffsetInterval,
		Now:           c.Clock,
		Logger:        b.log,
		FilesSetAside: &b.stats.configSetAside,
	}
	if c.BrokerRole == Slave || c.EnableControllerMode {
		// Commits made while not master go to the master first
		// (slave_sync.go); a controller-mode replica's role changes at
		// runtime. (The replication wiring opens after the offsets.)
		cfg.Slave = func() bool { return b.repl.isSlave() }
	}
	t, err := offsets.Open(cfg)
	if err != nil {
		return err
	}
	b.offsets = t
	return nil
}

// checkOffsetNames is offsets.Config.CheckNames: the names RocketMQ would
// take.
func checkOffsetNames(topic, group string) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	return ValidateGroup(group)
}
