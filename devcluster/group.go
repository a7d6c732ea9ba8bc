package devcluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/samsamq/samsa/broker"
)

// Group is one broker group of a Cluster: a master and its slaves, under
// one broker name.
type Group struct {
	// Name is the group's brokerName.
	Name   string
	Broker *broker.Broker   // the master (the first one, in controller mode)
	Slaves []*broker.Broker // Options.Slaves of them, then AddSlave's
	// dir is the group's directory (the cluster's Dir for a lone group):
	// the master's store, or its parent with slaves.
	dir string
	// master is the master's configuration, slaveHA
	// Options.SlaveHAAddr: what AddSlave starts a slave from.
	master  broker.Config
	slaveHA func(string) (string, error)
}

// BrokerAddr is the master's remoting address.
func (g *Group) BrokerAddr() string { return g.Broker.Addr() }

// startGroup starts group i of n: its master, then its slaves, and
// appends it to c.Groups as soon as the master runs (so Close stops what
// started).
func (c *Cluster) startGroup(opts Options, i, n int) error {
	cfg := opts.Broker.Clone()
	g := &Group{dir: c.Dir, slaveHA: opts.SlaveHAAddr}
	if n > 1 {
		cfg.BrokerName = groupName(cfg.BrokerName, i)
		g.dir = filepath.Join(c.Dir, cfg.BrokerName)
		if i > 0 {
			freePorts(&cfg)
		}
	}
	cfg.StorePathRootDir = g.dir
	if opts.Slaves > 0 {
		cfg.StorePathRootDir = filepath.Join(g.dir, "master")
	}
	cfg.NamesrvAddrs = []string{c.Namesrv.Addr()}
	if len(opts.ControllerAddrs) > 0 {
		cfg.EnableControllerMode = true
		cfg.ControllerAddrs = opts.ControllerAddrs
		if cfg.BrokerID < 1 {
			cfg.BrokerID = 1
		}
		if cfg.BrokerRole != broker.SyncMaster {
			cfg.BrokerRole = broker.AsyncMaster
		}
	}
	if cfg.ListenPort == 0 {
		_ = cfg.Set("listenPort", "0")
	}
	if cfg.Logger == nil {
		cfg.Logger = opts.Logger
	}
	b, err := startBroker(cfg)
	if err != nil {
		return err
	}
	g.Broker, g.master, g.Name = b, cfg, b.Config().BrokerName
	c.Groups = append(c.Groups, g)
	if cfg.EnableControllerMode {
		if err := waitControllerMaster(b, controllerWait); err != nil {
			return err
		}
	}
	for range opts.Slaves {
		if _, err := g.AddSlave(""); err != nil {
			return err
		}
	}
	if cfg.EnableControllerMode && opts.Slaves > 0 {
		return waitSyncStateSet(b, 1+opts.Slaves, controllerWait)
	}
	return nil
}

// groupName is the brokerName of group i (from 0) of several: base
// ending in "-a" (the default, broker-a) with that letter the group's,
// else base with "-" and the group's letter appended.
func groupName(base string, i int) string {
	if base == "" {
		base = broker.DefaultBrokerName
	}
	letter := string(rune('a' + i))
	if prefix, ok := strings.CutSuffix(base, "-a"); ok {
		return prefix + "-" + letter
	}
	return base + "-" + letter
}

// AddSlave starts one more slave of the group's master (brokerId
// len(Slaves)+1, free ports) with its store in dir, default
// <group dir>/slave-<id> (give a dir outside it when the group has no
// slaves yet: the master's store is the group's directory itself then),
// and appends it to Slaves; Close stops it with the rest. An empty store
// copies the master's whole log (haFullCopy): the lab's catch-up
// experiment fills a master first, then adds a slave. Not safe for
// concurrent use with itself or Close.
func (g *Group) AddSlave(dir string) (*broker.Broker, error) {
	i := len(g.Slaves) + 1
	c := slaveConfig(g.master, g.dir, i)
	if dir != "" {
		c.StorePathRootDir = dir
	}
	if g.slaveHA != nil {
		addr, err := g.slaveHA(g.Broker.Replication().HAAddr())
		if err != nil {
			return nil, fmt.Errorf("devcluster: %s slave %d: its master's replication address: %w", g.Name, i, err)
		}
		c.HAMasterAddress = addr
	}
	s, err := startBroker(c)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %s slave %d: %w", g.Name, i, err)
	}
	g.Slaves = append(g.Slaves, s)
	return s, nil
}

// startBroker makes and starts a broker, closing it when it does not
// start.
func startBroker(cfg broker.Config) (*broker.Broker, error) {
	b, err := broker.New(cfg)
	if err == nil {
		if err = b.Start(); err != nil {
			err = errors.Join(err, b.Close())
		}
	}
	return b, err
}

// slaveConfig is slave i of the master's config: its own store under dir
// and free ports.
func slaveConfig(master broker.Config, dir string, i int) broker.Config {
	c := master.Clone()
	c.StorePathRootDir = filepath.Join(dir, fmt.Sprintf("slave-%d", i))
	c.BrokerRole, c.BrokerID = broker.Slave, int64(i)
	if master.EnableControllerMode { // the controller says who is master
		c.BrokerRole, c.BrokerID = master.BrokerRole, master.BrokerID+int64(i)
	}
	freePorts(&c)
	return c
}

// freePorts has c listen on free ports: remoting, replication and (unless
// off) admin.
func freePorts(c *broker.Config) {
	_ = c.Set("listenPort", "0")
	_ = c.Set("haListenPort", "0")
	if c.AdminListen != "off" {
		c.AdminListen = broker.DefaultAdminListen
	}
}

// close stops the slaves, then the master, cleanly.
func (g *Group) close() error {
	var err error
	for _, s := range g.Slaves {
		err = errors.Join(err, s.Close())
	}
	return errors.Join(err, g.Broker.Close())
}
