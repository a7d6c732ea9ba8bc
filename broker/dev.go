package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/namesrv"
)

// DevOptions configure StartDev's embedded cluster.
type DevOptions struct {
	// Dir is the broker's storePathRootDir. Default: a new temporary
	// directory, removed by Dev.Close unless Keep.
	Dir string
	// Keep leaves a temporary Dir in place on Close.
	Keep bool
	// NamesrvListen is the name server's address. Default "127.0.0.1:0".
	NamesrvListen string
	// NamesrvTLS is the name server's TLS mode and files. Default
	// disabled.
	NamesrvTLS netx.TLSServerOptions
	// Broker is the broker's configuration template; StartDev sets
	// StorePathRootDir and NamesrvAddrs, and, unless set, a free port
	// (listenPort 0). Zero fields get the usual defaults.
	Broker Config
	// Slaves is how many slaves (brokerId 1, 2, ...) run beside the
	// master, on free ports. With slaves the master's store is Dir/master
	// and slave i's Dir/slave-i. Each follows the master's CommitLog over
	// the replication link and copies its metadata; Broker.BrokerRole
	// (ASYNC_MASTER or SYNC_MASTER) says whether sends wait for them.
	Slaves int
	// SlaveHAAddr, if set, maps the master's replication address (its
	// advertised host and the port its HA listener bound) to the address
	// the slaves dial instead: StartDev and AddSlave call it once per
	// slave, after the master listens, and give the answer to the slave
	// as its static haMasterAddress. The lab puts a delaying proxy there
	// (loadgen/linkdelay). Default nil: slaves learn the master's address
	// from the name server, as in production.
	SlaveHAAddr func(masterHA string) (string, error)
	// Logger for both servers. Default slog.Default().
	Logger *slog.Logger
	// NamesrvACLFile, when set, runs the name server with access control
	// on this accounts file (namesrv.Options.ACLEnable). The broker's own
	// ACL is in Broker (aclEnable, aclFile, accessKey, secretKey).
	NamesrvACLFile string
	// ControllerAddrs, when set, run every broker in controller mode
	// (enableControllerMode) against these controller replicas: the
	// broker is brokerId 1 (unless Broker says otherwise), slave i is
	// brokerId 1+i with the broker's brokerRole, and the controller
	// names the master and elects another when it stops. StartDev
	// returns once the controller has named the broker master.
	ControllerAddrs []string
}

// Dev is a running name server and broker in this process: what `samsa
// dev`, tests, the lab and loadgen use as an embedded cluster.
type Dev struct {
	Namesrv *namesrv.Server
	Broker  *Broker
	Slaves  []*Broker // DevOptions.Slaves of them
	Dir     string
	tempDir bool
	keep    bool
	// master is the master's configuration, slaveHA DevOptions.SlaveHAAddr:
	// what AddSlave starts a slave from.
	master  Config
	slaveHA func(string) (string, error)
}

// NamesrvAddr is the name server's address.
func (d *Dev) NamesrvAddr() string { return d.Namesrv.Addr() }

// BrokerAddr is the broker's remoting address.
func (d *Dev) BrokerAddr() string { return d.Broker.Addr() }

// StartDev starts a name server and a broker registered with it (and
// DevOptions.Slaves slaves of it), all on loopback.
func StartDev(opts DevOptions) (*Dev, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Dev{Dir: opts.Dir, keep: opts.Keep, slaveHA: opts.SlaveHAAddr}
	if d.Dir == "" {
		dir, err := os.MkdirTemp("", "samsa-dev-")
		if err != nil {
			return nil, err
		}
		d.Dir, d.tempDir = dir, true
	}
	listen := opts.NamesrvListen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ns, err := namesrv.New(namesrv.Options{Listen: listen, Logger: opts.Logger, TLS: opts.NamesrvTLS,
		ACLEnable: opts.NamesrvACLFile != "", ACLFile: opts.NamesrvACLFile})
	if err == nil {
		err = ns.Start()
	}
	if err != nil {
		return nil, errors.Join(err, d.removeDir())
	}
	d.Namesrv = ns
	cfg := opts.Broker.Clone()
	cfg.StorePathRootDir = d.Dir
	if opts.Slaves > 0 {
		cfg.StorePathRootDir = filepath.Join(d.Dir, "master")
	}
	cfg.NamesrvAddrs = []string{ns.Addr()}
	if len(opts.ControllerAddrs) > 0 {
		cfg.EnableControllerMode = true
		cfg.ControllerAddrs = opts.ControllerAddrs
		if cfg.BrokerID < 1 {
			cfg.BrokerID = 1
		}
		if cfg.BrokerRole != SyncMaster {
			cfg.BrokerRole = AsyncMaster
		}
	}
	if cfg.ListenPort == 0 {
		_ = cfg.Set("listenPort", "0")
	}
	if cfg.Logger == nil {
		cfg.Logger = opts.Logger
	}
	b, err := startDevBroker(cfg)
	if err != nil {
		return nil, errors.Join(err, ns.Close(), d.removeDir())
	}
	d.Broker, d.master = b, cfg
	if cfg.EnableControllerMode {
		if err := waitControllerMaster(b, devControllerWait); err != nil {
			return nil, errors.Join(err, d.Close())
		}
	}
	for i := 1; i <= opts.Slaves; i++ {
		if _, err := d.AddSlave(""); err != nil {
			return nil, errors.Join(err, d.Close())
		}
	}
	if cfg.EnableControllerMode && opts.Slaves > 0 {
		// Only the sync-state set is electable: a fail-over needs the
		// slaves in it, which the master asks for once they caught up.
		deadline := time.Now().Add(devControllerWait)
		for len(b.ControllerSyncSet()) < 1+opts.Slaves {
			if time.Now().After(deadline) {
				return nil, errors.Join(fmt.Errorf("dev: the slaves did not join the sync-state set within %v (set %v)", devControllerWait, b.ControllerSyncSet()), d.Close())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return d, nil
}

// AddSlave starts one more slave of the master (brokerId len(Slaves)+1,
// free ports) with its store in dir, default Dir/slave-<id> (give a dir
// outside Dir when StartDev ran without slaves: the master's store is Dir
// itself then), and appends
// it to Slaves; Close stops it with the rest. An empty store copies the
// master's whole log (haFullCopy): the lab's catch-up experiment fills a
// master first, then adds a slave. Not safe for concurrent use with
// itself or Close.
func (d *Dev) AddSlave(dir string) (*Broker, error) {
	i := len(d.Slaves) + 1
	c := devSlaveConfig(d.master, d.Dir, i)
	if dir != "" {
		c.StorePathRootDir = dir
	}
	if d.slaveHA != nil {
		addr, err := d.slaveHA(d.Broker.HAAddr())
		if err != nil {
			return nil, fmt.Errorf("broker: dev slave %d: its master's replication address: %w", i, err)
		}
		c.HAMasterAddress = addr
	}
	s, err := startDevBroker(c)
	if err != nil {
		return nil, fmt.Errorf("broker: dev slave %d: %w", i, err)
	}
	d.Slaves = append(d.Slaves, s)
	return s, nil
}

func startDevBroker(cfg Config) (*Broker, error) {
	b, err := New(cfg)
	if err == nil {
		if err = b.Start(); err != nil {
			err = errors.Join(err, b.Close())
		}
	}
	return b, err
}

// devSlaveConfig is slave i of the master's config: its own store and
// free ports.
func devSlaveConfig(master Config, dir string, i int) Config {
	c := master.Clone()
	c.StorePathRootDir = filepath.Join(dir, fmt.Sprintf("slave-%d", i))
	c.BrokerRole, c.BrokerID = Slave, int64(i)
	if master.EnableControllerMode { // the controller says who is master
		c.BrokerRole, c.BrokerID = master.BrokerRole, master.BrokerID+int64(i)
	}
	_ = c.Set("listenPort", "0")
	_ = c.Set("haListenPort", "0")
	if c.AdminListen != "off" {
		c.AdminListen = DefaultAdminListen
	}
	return c
}

func (d *Dev) removeDir() error {
	if d.tempDir && !d.keep {
		return os.RemoveAll(d.Dir)
	}
	return nil
}

// Close stops the slaves and the broker (cleanly), then the name server,
// and removes a temporary directory.
func (d *Dev) Close() error {
	var err error
	for _, s := range d.Slaves {
		err = errors.Join(err, s.Close())
	}
	err = errors.Join(err, d.Broker.Close())
	err = errors.Join(err, d.Namesrv.Close())
	return errors.Join(err, d.removeDir())
}

// devControllerWait bounds how long StartDev waits for the controller to
// name its broker master (a new single-replica controller elects itself
// Raft leader first, then waits one election timeout of heartbeats).
const devControllerWait = 60 * time.Second

// waitControllerMaster waits until the controller has named b master.
func waitControllerMaster(b *Broker, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for b.ControllerRole() != "master" {
		if time.Now().After(deadline) {
			return fmt.Errorf("dev: the controller did not name broker %d master within %v (role %q)", b.Config().BrokerID, limit, b.ControllerRole())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
