package durability

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/internal/freeport"
	"github.com/samsamq/samsa/loadgen/killloop"
)

// cluster is a name server and a broker of one run, on loopback; with
// Options.Role, the broker is a master and a slave follows it.
type cluster struct {
	opts        *Options
	dir         string // the run's dir: store/, namesrv.log, broker.log (and slave-store/, slave.log)
	namesrvAddr string
	brokerPort  int
	haPort      int // the broker's haListenPort (the master's in replication runs)
	slavePort   int // the slave's listenPort (replication runs)
	namesrv     *killloop.Proc
	broker      *killloop.Proc
	slave       *killloop.Proc // nil unless Options.Role is set
	starts      int            // broker incarnations started
}

// newCluster makes the run's dir and picks the ports.
func newCluster(o *Options) (*cluster, error) {
	kind := "durability-"
	if o.Role != "" {
		kind = "replication-" + strings.ToLower(o.Role) + "-"
	}
	dir, err := killloop.RunDir(o.Dir, kind+o.Backend+"-"+o.Flush+"-")
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Get(4)
	if err != nil {
		return nil, err
	}
	return &cluster{opts: o, dir: dir, namesrvAddr: killloop.Addr(ports[0]), brokerPort: ports[1],
		haPort: ports[2], slavePort: ports[3]}, nil
}

func (c *cluster) brokerAddr() string { return killloop.Addr(c.brokerPort) }

func (c *cluster) slaveAddr() string { return killloop.Addr(c.slavePort) }

// start starts a process of the run into *p, its output in
// <dir>/<name>.log; it does not wait for it.
func (c *cluster) start(p **killloop.Proc, name string, args []string) error {
	np, err := killloop.StartProc(name, c.opts.Binary, filepath.Join(c.dir, name+".log"), args)
	if err != nil {
		return err
	}
	*p = np
	return nil
}

// startNamesrv starts the name server and waits until it listens.
func (c *cluster) startNamesrv() error {
	if err := c.start(&c.namesrv, "namesrv", []string{"namesrv", "-listen", c.namesrvAddr, "-log-level", "warn"}); err != nil {
		return err
	}
	return c.namesrv.WaitListening(c.namesrvAddr, c.opts.StartTimeout)
}

// brokerArgs is the broker's command line for the run's configuration:
// the master's when Options.Role is set (haListenPort fixed, so the
// slave's static haMasterAddress finds every incarnation).
func (c *cluster) brokerArgs() []string {
	// haListenPort is always the picked port: by default it is listenPort+1,
	// which nothing reserved, and the broker failed to start when another
	// process's connection held it ("replication listener: bind: address
	// already in use").
	args := append(c.commonArgs("store", c.brokerPort), "-D", "haListenPort="+strconv.Itoa(c.haPort))
	if role := c.opts.Role; role != "" {
		args = append(args, "-D", "brokerRole="+role)
	}
	return append(args, c.propArgs()...)
}

// slaveArgs is the slave's command line: brokerId 1 of the same broker
// name, its own store and port, following the master's HA port, copying
// the master's topics every second (the check reads the topic there).
func (c *cluster) slaveArgs() []string {
	args := c.commonArgs("slave-store", c.slavePort)
	args = append(args, "-D", "brokerRole=SLAVE", "-D", "brokerId=1",
		"-D", "haMasterAddress=127.0.0.1:"+strconv.Itoa(c.haPort), "-D", "slaveSyncInterval=1000")
	return append(args, c.propArgs()...)
}

// commonArgs are the flags a run's master and slave share.
func (c *cluster) commonArgs(store string, port int) []string {
	o := c.opts
	return []string{"broker", "-n", c.namesrvAddr, "-dir", filepath.Join(c.dir, store),
		"-listen", "127.0.0.1", "-port", strconv.Itoa(port), "-admin", "off",
		"-flush", o.Flush, "-backend", o.Backend, "-log-level", "info",
		"-D", "mappedFileSizeCommitLog=" + strconv.FormatInt(o.SegmentSize, 10),
		"-D", "brokerName=" + killloop.BrokerName}
}

// propArgs are the -D flags of AckBuffered and Props.
func (c *cluster) propArgs() []string {
	var args []string
	if c.opts.AckBuffered {
		args = append(args, "-D", "transientStorePoolEnable=true")
	}
	for _, kv := range c.opts.Props {
		args = append(args, "-D", kv)
	}
	return args
}

// startBroker starts a broker incarnation; it does not wait for it.
func (c *cluster) startBroker() error {
	err := c.start(&c.broker, "broker", c.brokerArgs())
	if err == nil {
		c.starts++
	}
	return err
}

// startSlave starts the slave; it does not wait for it.
func (c *cluster) startSlave() error { return c.start(&c.slave, "slave", c.slaveArgs()) }

// close kills whatever still runs.
func (c *cluster) close() {
	for _, p := range []*killloop.Proc{c.slave, c.broker, c.namesrv} {
		if p != nil && p.Alive() {
			_ = p.Kill(c.opts.StopTimeout)
		}
	}
}

// logTail is the last n lines of one of the run's logs, for errors.
func (c *cluster) logTail(name string, n int) string {
	t, err := killloop.Tail(filepath.Join(c.dir, name), n)
	if err != nil {
		return err.Error()
	}
	return t
}
