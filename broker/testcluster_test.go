package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/namesrv"
)

// testCluster is a name server, a broker registered with it and the
// broker's slaves, in this process: what devcluster.Start runs, for this
// package's own tests, which cannot import devcluster (it imports broker).
// It keeps only what these tests use: no temporary directory, controller
// mode or proxy hook.
type testCluster struct {
	Namesrv *namesrv.Server
	Broker  *Broker
	Slaves  []*Broker
	// master is the broker's configuration, for a test that starts one
	// more (misconfigured) slave by hand.
	master Config
}

// clusterOptions configure startCluster, as devcluster.Options do.
type clusterOptions struct {
	// Dir is the broker's store; with slaves the master's is Dir/master
	// and slave i's Dir/slave-i.
	Dir            string
	Logger         *slog.Logger
	Broker         Config // the master's template; a free port unless set
	Slaves         int
	NamesrvTLS     netx.TLSServerOptions
	NamesrvACLFile string
}

// startCluster starts a name server on a free loopback port, the broker
// and o.Slaves slaves.
func startCluster(o clusterOptions) (*testCluster, error) {
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: o.Logger, TLS: o.NamesrvTLS,
		ACLEnable: o.NamesrvACLFile != "", ACLFile: o.NamesrvACLFile})
	if err == nil {
		err = ns.Start()
	}
	if err != nil {
		return nil, err
	}
	c := &testCluster{Namesrv: ns}
	cfg := o.Broker.Clone()
	cfg.StorePathRootDir = o.Dir
	if o.Slaves > 0 {
		cfg.StorePathRootDir = filepath.Join(o.Dir, "master")
	}
	cfg.NamesrvAddrs = []string{ns.Addr()}
	if cfg.ListenPort == 0 {
		_ = cfg.Set("listenPort", "0")
	}
	if cfg.Logger == nil {
		cfg.Logger = o.Logger
	}
	if c.Broker, err = startConfigured(cfg); err != nil {
		return nil, errors.Join(err, ns.Close())
	}
	c.master = cfg
	for i := 1; i <= o.Slaves; i++ {
		s, err := startConfigured(slaveConfig(cfg, o.Dir, i))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("slave %d: %w", i, err), c.Close())
		}
		c.Slaves = append(c.Slaves, s)
	}
	return c, nil
}

// NamesrvAddr is the name server's address.
func (c *testCluster) NamesrvAddr() string { return c.Namesrv.Addr() }

// BrokerAddr is the broker's remoting address.
func (c *testCluster) BrokerAddr() string { return c.Broker.Addr() }

// Close stops the slaves, the broker and the name server.
func (c *testCluster) Close() error {
	var err error
	for _, s := range c.Slaves {
		err = errors.Join(err, s.Close())
	}
	return errors.Join(err, c.Broker.Close(), c.Namesrv.Close())
}

// startConfigured makes and starts a broker, closing it when it does not
// start.
func startConfigured(cfg Config) (*Broker, error) {
	b, err := New(cfg)
	if err == nil {
		if err = b.Start(); err != nil {
			err = errors.Join(err, b.Close())
		}
	}
	return b, err
}

// slaveConfig is slave i of the master's config: its store Dir/slave-i,
// free ports.
func slaveConfig(master Config, dir string, i int) Config {
	c := master.Clone()
	c.StorePathRootDir = filepath.Join(dir, fmt.Sprintf("slave-%d", i))
	c.BrokerRole, c.BrokerID = Slave, int64(i)
	_ = c.Set("listenPort", "0")
	_ = c.Set("haListenPort", "0")
	if c.AdminListen != "off" {
		c.AdminListen = DefaultAdminListen
	}
	return c
}
