package devcluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/namesrv"
)

// MaxGroups is the most broker groups one cluster runs (broker-a to
// broker-z).
const MaxGroups = 26

// Options configure Start's cluster.
type Options struct {
	// Dir is the data directory (the package doc gives its layout).
	// Default: a new temporary directory, removed by Close unless Keep.
	Dir string
	// Keep leaves a temporary Dir in place on Close.
	Keep bool
	// NamesrvListen is the name server's address. Default "127.0.0.1:0".
	NamesrvListen string
	// NamesrvTLS is the name server's TLS mode and files. Default
	// disabled.
	NamesrvTLS netx.TLSServerOptions
	// NamesrvACLFile, when set, runs the name server with access control
	// on this accounts file (namesrv.Options.ACLEnable). The brokers' own
	// ACL is in Broker (aclEnable, aclFile, accessKey, secretKey).
	NamesrvACLFile string
	// Broker is the brokers' configuration template; Start sets
	// StorePathRootDir and NamesrvAddrs, and, unless set, a free port
	// (listenPort 0). Zero fields get the usual defaults.
	Broker broker.Config
	// Groups is how many broker groups (a master and its Slaves each)
	// run in the cluster, at most MaxGroups. Default 1: one group named
	// Broker.BrokerName, its store Dir. With more, the groups are named
	// with a letter from Broker.BrokerName: "broker-a" (the default) gives
	// broker-a, broker-b, ...; any other name not ending in "-a" gets
	// "-a", "-b", ... appended. Each group keeps its stores under
	// Dir/<name>, and every group after the first listens on free ports
	// (remoting, replication and admin) as slaves do: the first keeps
	// Broker's.
	Groups int
	// Slaves is how many slaves (brokerId 1, 2, ...) run beside each
	// master, on free ports. With slaves a group's master stores in
	// <group dir>/master and slave i in <group dir>/slave-i. Each follows
	// its master's CommitLog over the replication link and copies its
	// metadata; Broker.BrokerRole (ASYNC_MASTER or SYNC_MASTER) says
	// whether sends wait for them.
	Slaves int
	// SlaveHAAddr, if set, maps a master's replication address (its
	// advertised host and the port its HA listener bound) to the address
	// the slave dials instead: Start and AddSlave call it once per slave,
	// after the master listens, and give the answer to the slave as its
	// static haMasterAddress. The lab puts a delaying proxy there
	// (loadgen/linkdelay). Default nil: slaves learn their master's
	// address from the name server, as in production.
	SlaveHAAddr func(masterHA string) (string, error)
	// Logger for the name server and the brokers (unless Broker.Logger
	// is set). Default slog.Default().
	Logger *slog.Logger
	// ControllerAddrs, when set, run every broker in controller mode
	// (enableControllerMode) against these controller replicas: a master
	// is brokerId 1 (unless Broker says otherwise), its slave i brokerId
	// 1+i with the master's brokerRole, and the controller names each
	// group's master and elects another when it stops. Start returns once
	// the controller has named every group's master and its slaves are in
	// the group's sync-state set.
	ControllerAddrs []string
}

// Cluster is a running name server and its broker groups in this
// process.
type Cluster struct {
	// Group is the first broker group, Groups[0]. Its fields and methods
	// are promoted: a one-group cluster reads dev.Broker, dev.Slaves,
	// dev.BrokerAddr(), dev.AddSlave.
	*Group
	Namesrv *namesrv.Server
	// Groups are the broker groups, in the order of their names.
	Groups []*Group
	// Dir is the data directory (Options.Dir, or the temporary one).
	Dir     string
	tempDir bool
	keep    bool
}

// NamesrvAddr is the name server's address: all a client needs.
func (c *Cluster) NamesrvAddr() string { return c.Namesrv.Addr() }

// Start starts a name server and Options.Groups broker groups registered
// with it, in one cluster (each a master and Options.Slaves slaves), all
// on loopback. On
// an error it stops what it started and removes a temporary Dir.
func Start(opts Options) (*Cluster, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	groups := opts.Groups
	if groups == 0 {
		groups = 1
	}
	if groups < 1 || groups > MaxGroups {
		return nil, fmt.Errorf("devcluster: %d groups: want 1 to %d", opts.Groups, MaxGroups)
	}
	c := &Cluster{Dir: opts.Dir, keep: opts.Keep}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "samsa-dev-")
		if err != nil {
			return nil, err
		}
		c.Dir, c.tempDir = dir, true
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
		return nil, errors.Join(err, c.removeDir())
	}
	c.Namesrv = ns
	for i := range groups {
		if err := c.startGroup(opts, i, groups); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	c.Group = c.Groups[0]
	return c, nil
}

func (c *Cluster) removeDir() error {
	if c.tempDir && !c.keep {
		return os.RemoveAll(c.Dir)
	}
	return nil
}

// Close stops every group (its slaves, then its master, cleanly), then
// the name server, and removes a temporary Dir.
func (c *Cluster) Close() error {
	var err error
	for _, g := range c.Groups {
		err = errors.Join(err, g.close())
	}
	if c.Namesrv != nil {
		err = errors.Join(err, c.Namesrv.Close())
	}
	return errors.Join(err, c.removeDir())
}
