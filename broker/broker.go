package broker

import (
	"errors"
	"fmt"
	bmetaq "github.com/samsamq/samsa/broker/metaq"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/broker/delay"
	"github.com/samsamq/samsa/broker/offsets"
	"github.com/samsamq/samsa/broker/pop"
	"github.com/samsamq/samsa/broker/repair"
	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// DefaultVersion is what the text protocol's version command and the
// stats report when Config.Version is empty.
const DefaultVersion = "samsa-0.1.0-dev"

// Broker is one broker: listener, store, managers and loops. New opens the
// store (recovering it), Start listens and registers, Close shuts down
// cleanly. Methods are safe for concurrent use.
type Broker struct {
	cfg       Config
	log       *slog.Logger
	ans       answers // bounds answers (answer_limits.go)
	store     *storage.Store
	topics    *topicManager
	offsets   *offsets.Table
	clients   *clientManager
	locks     *lockManager
	groups    *groupManager
	poll      *longPoll
	appends   *appendCombiner // nil with SYNC_FLUSH: single sends append alone
	stats     stats
	metrics   *metrics
	reg       *registrar
	handlers  map[int32]requestHandler
	offReq    *offsetRequests  // the offset requests (handle_offsets.go)
	mqadmin   *mqadminRequests // mqadmin's requests (mqadmin*.go)
	clientReq *clientRequests  // clients' heartbeats and locks (handle_client.go)
	sem       chan struct{}
	pid       int
	started   time.Time
	// storeHost is the address stamped in every record (BrokerIP1 and the
	// listening port), set by Start before any request is read.
	storeHost netip.AddrPort

	ln      net.Listener
	net     netState // caps, timeouts, TLS (conn_net.go)
	web     *httpListener
	stop    chan struct{}
	closing atomic.Bool
	loops   sync.WaitGroup // the broker's own goroutines
	rates   rateSampler    // message rates for GET_BROKER_RUNTIME_INFO (mqadmin_rates.go)
	connWG  sync.WaitGroup // connection readers
	mu      struct {
		sync.Mutex
		conns   map[*conn]struct{}
		started bool
		closed  bool
	}
	closeErr  error
	closeOnce sync.Once

	repl   *Replication // replication and controller mode (ha.go, ha_wiring.go)
	repair *repair.Repairer
	txn    *txn.Service // transactions (package txn, txn_wiring.go); nil on a slave
	xa     *xa.Manager  // XA branches (package xa, xa_wiring.go); nil on a slave
	acl    *brokerACL   // access control (acl.go); nil with aclEnable=false

	delay *delay.Service // delayed delivery (package delay, delay_wiring.go)
	pop   *pop.Service   // POP consumption (package pop, pop_wiring.go); nil on a slave
	metaq *bmetaq.Server // MetaQ's text put, get and offset (text_metaq.go)
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("broker: closed")

// New validates cfg, loads topics and offsets and opens the store (which
// recovers after an unclean stop). Nothing listens until Start.
func New(cfg Config) (*Broker, error) {
	cfg = cfg.Clone()
	cfg.EnsureDefaults()
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, ans: answers{maxFrame: cfg.MaxFrameSize, log: cfg.Logger}, stop: make(chan struct{}), sem: make(chan struct{}, cfg.MaxConcurrentRequests),
		pid: os.Getpid()}
	var err error
	if b.acl, err = openACL(&b.cfg); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	opened := false
	defer func() {
		if !opened {
			b.acl.close()
		}
	}()
	b.mu.conns = make(map[*conn]struct{})
	if err := b.loadNet(); err != nil {
		return nil, err
	}
	b.topics = newTopicManager(cfg.FS, &b.cfg)
	b.clients = newClientManager(cfg.ClientChannelMaxIdle)
	b.locks = newLockManager(DefaultLockMaxLive)
	b.groups = newGroupManager(cfg.FS, &b.cfg)
	if err := cfg.FS.MkdirAll(cfg.ConfigDir()); err != nil && !b.startOnFull(err) {
		return nil, fmt.Errorf("broker: %w", err)
	}
	rep := b.fileReport() // config files never keep the broker from starting (jsonfile_load.go)
	b.topics.file.rep, b.groups.file.rep = rep, rep
	if err := b.topics.load(); err != nil {
		return nil, err
	}
	if err := b.groups.load(); err != nil {
		return nil, err
	}
	st, err := storage.Open(b.storeOptions())
	if err != nil {
		return nil, fmt.Errorf("broker: open store: %w", err)
	}
	b.store = st
	if err := b.openOffsets(); err != nil { // offsets_wiring.go
		return nil, closeStoreAfter(st, err)
	}
	if q := st.Quarantined(); len(q) > 0 { // reads the quarantine file now, not at the first pull
		b.log.Warn("broker: the store holds quarantined corrupt records; pulls move consumers past them", "records", len(q))
	}
	if cfg.FlushDiskType != SyncFlush {
		b.appends = newAppendCombiner(st, cfg.MappedFileSizeCommitLog)
	}
	b.poll = newLongPoll(cfg.Clock, cfg.MaxHeldPulls, &b.stats, b.answerHeld)
	st.OnDispatch(b.poll.onDispatch)
	b.metrics = newMetrics(b)
	b.reg = newRegistrar(b)
	if err := b.openReplication(); err != nil { // ha_wiring.go
		return nil, closeStoreAfter(st, err)
	}
	if cfg.BrokerRole != Slave {
		if err := b.openTxn(); err != nil {
			return nil, closeStoreAfter(st, err)
		}
	}
	if err := b.openDelay(); err != nil {
		return nil, closeStoreAfter(st, err)
	}
	if cfg.BrokerRole != Slave {
		if err := b.openPop(); err != nil {
			return nil, closeStoreAfter(st, err)
		}
	}
	if err := b.openRepair(); err != nil {
		return nil, closeStoreAfter(st, err)
	}
	b.metaq = b.newMetaQ()
	b.mqadmin = &mqadminRequests{cfg: &b.cfg, store: st, offsets: b.offsets, topics: b.topics, clients: b.clients,
		stats: &b.stats, rates: &b.rates, now: cfg.Clock, ans: b.ans}
	if b.pop != nil {
		b.mqadmin.pop = b.pop
	}
	b.clientReq = &clientRequests{cfg: &b.cfg, log: b.log, clients: b.clients, groups: b.groups, topics: b.topics, locks: b.locks,
		isSlave: b.repl.isSlave, topicsChanged: b.reg.topicsChanged, ans: b.ans}
	b.offReq = &offsetRequests{store: st, offsets: b.offsets, topics: b.topics, isSlave: b.repl.isSlave, now: cfg.Clock, ans: b.ans}
	b.handlers = b.requestHandlers()
	opened = true
	return b, nil
}

// closeStoreAfter closes the store New opened before failing with err; its
// Close error (recovery may have written) joins err.
func closeStoreAfter(st *storage.Store, err error) error {
	if cerr := st.Close(); cerr != nil {
		return errors.Join(err, fmt.Errorf("broker: close store: %w", cerr))
	}
	return err
}

// storeOptions maps the broker's configuration onto the store's.
func (b *Broker) storeOptions() storage.Options {
	c := &b.cfg
	o := storage.Options{
		Dir:            c.StorePathRootDir,
		FS:             c.FS,
		Backend:        c.StoreBackend,
		SegmentSize:    c.MappedFileSizeCommitLog,
		MaxMessageSize: c.MaxMessageSize,
		Logger:         c.Logger,
		Clock:          c.Clock,
		AckBuffered:    c.TransientStorePoolEnable,
	}
	o.ConsumeQueueMaxOpenFiles = c.MaxOpenConsumeQueueFiles
	o.ReadCacheSize = int64(c.ReadBlockCacheMB) << 20 // -1: off
	o.DirectColdReads = c.DirectColdReads
	o.NoStage = !c.StageAppends
	o.MessageIndex = storage.MessageIndexOptions{Disabled: !c.MessageIndexEnable, MaxHashSlots: c.MaxHashSlotNum, MaxEntries: c.MaxIndexNum}
	o.Flush.Policy = storage.FlushAsync
	if c.FlushDiskType == SyncFlush {
		o.Flush.Policy = storage.FlushSync
	}
	o.Flush.MaxBatchBytes = c.GroupCommitMaxBatchBytes
	o.Flush.MinInterval = c.GroupCommitMinInterval
	o.Flush.MaxGather = c.GroupCommitMaxGather
	o.Flush.Timeout = c.SyncFlushTimeout
	// A SYNC_FLUSH send is answered within syncFlushTimeout however the
	// disk behaves, so no producer's fsync runs on its own goroutine.
	o.Flush.NoOwnRound = true
	o.Flush.Interval = c.FlushIntervalCommitLog
	o.Flush.DirtyPages = c.FlushCommitLogLeastPages
	o.Flush.FullInterval = c.FlushCommitLogThoroughInterval
	o.Retention.MaxAge = time.Duration(c.FileReservedTime) * time.Hour
	if c.FileReservedTime == 0 {
		o.Retention.MaxAge = -1
	}
	o.Retention.DiskRatio = float64(c.DiskMaxUsedSpaceRatio) / 100
	if c.DiskMaxUsedSpaceRatio == 0 {
		o.Retention.DiskRatio = -1
	}
	return o
}

// Start listens on ListenAddr:ListenPort, starts the admin listener and the
// loops, and registers with the name servers (the first registration is
// tried once before Start returns, so a client can route at once).
func (b *Broker) Start() error {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if b.mu.started {
		b.mu.Unlock()
		return errors.New("broker: already started")
	}
	b.mu.started = true
	b.mu.Unlock()

	ln, err := b.listen(net.JoinHostPort(b.cfg.ListenAddr, strconv.Itoa(b.cfg.ListenPort)), "broker")
	if err != nil {
		return fmt.Errorf("broker: listen: %w", err)
	}
	b.ln, b.net.ln = ln, ln
	port := ln.Addr().(*net.TCPAddr).Port
	ip, _ := netip.ParseAddr(b.cfg.BrokerIP1)
	b.storeHost = netip.AddrPortFrom(ip, uint16(port))
	if b.cfg.AdminListen != "off" {
		a, err := startHTTPListener(b)
		if err != nil {
			_ = ln.Close() // nothing accepted on it yet
			return err
		}
		b.web = a
	}
	b.started = b.cfg.Clock()
	b.mqadmin.started = b.started
	b.goLoop(func() { b.poll.run(b.stop) })
	b.goLoop(b.acceptLoop)
	b.goLoop(func() { b.offsets.Run(b.stop) })
	b.goLoop(b.clientScanLoop)
	b.goLoop(func() { b.rates.run(b.cfg.Clock, &b.stats.cmdPut, &b.stats.cmdGet, b.stop) })
	b.goLoop(func() { b.repair.Run(b.stop) })
	if b.repl.meta != nil {
		b.goLoop(b.repl.meta.run)
	}
	if b.txn != nil {
		b.goLoop(func() { b.txn.Run(b.stop) })
		b.goLoop(func() { runXASweep(b.xa, b.stop) })
	}
	b.goLoop(func() { b.delay.Run(b.stop) }) // returns at once on a slave
	b.reg.registerAll(true)
	b.goLoop(b.reg.run)
	if b.repl.ctl != nil {
		b.goLoop(b.repl.ctl.run)
	}
	if b.cfg.BrokerRole == Slave {
		if err := b.repl.startHASlave(); err != nil {
			return err
		}
	}
	b.log.Info("broker: started", "addr", b.Addr(), "admin", b.AdminAddr(), "name", b.cfg.BrokerName,
		"id", b.cfg.BrokerID, "role", b.cfg.BrokerRole, "cluster", b.cfg.BrokerClusterName, "namesrv", b.cfg.NamesrvAddrs,
		"store", b.cfg.StorePathRootDir, "flush", b.cfg.FlushDiskType, "backend", b.cfg.StoreBackend)
	so := b.store.Options()
	b.log.Info("broker: "+so.DurabilityNote(), "durability", so.Durability().String())
	return nil
}

func (b *Broker) goLoop(f func()) {
	b.loops.Add(1)
	go func() {
		defer b.loops.Done()
		f()
	}()
}

// Addr is the advertised remoting address (BrokerIP1:port), "" before Start.
func (b *Broker) Addr() string {
	if !b.storeHost.IsValid() {
		return ""
	}
	return b.storeHost.String()
}

// AdminAddr is the admin HTTP listener's address, "" when off or before
// Start.
func (b *Broker) AdminAddr() string {
	if b.web == nil {
		return ""
	}
	return b.web.addr()
}

// Config returns the broker's configuration (defaults filled in).
func (b *Broker) Config() Config { return b.cfg }

// Store returns the broker's store (for embedding tools and tests).
func (b *Broker) Store() *storage.Store { return b.store }

// acquire takes a processing slot, giving up when done closes.
func (b *Broker) acquire(done <-chan struct{}) bool {
	select {
	case b.sem <- struct{}{}:
		return true
	case <-done:
		return false
	}
}

func (b *Broker) release() { <-b.sem }

// Close shuts down cleanly: stop accepting, answer held pulls, finish the
// requests in flight, flush their answers, persist offsets and topics,
// unregister from the name servers and close the store (its clean marker
// lets the next Open skip recovery). On a full disk the files keep their
// last saved versions and the store closes uncleanly: logged, not an error
// (diskfull.go). It is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.shutdown() })
	return b.closeErr
}

func (b *Broker) shutdown() error {
	b.closing.Store(true)
	b.mu.Lock()
	b.mu.closed = true
	started := b.mu.started
	conns := make([]*conn, 0, len(b.mu.conns))
	for c := range b.mu.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	var errs []error
	if b.ln != nil {
		_ = b.ln.Close() // stops accepting; a close error leaves nothing to do
	}
	if !started {
		b.poll.close()
	}
	close(b.stop) // the long poll answers every held pull as it stops
	if b.pop != nil {
		// waiting pops answer at once; what is in flight is on disk already
		if err := b.pop.Close(); err != nil {
			errs = append(errs, fmt.Errorf("broker: close POP: %w", err))
		}
	}
	// Readers stop at once; each then waits for its requests in flight
	// and lets its writer flush.
	for _, c := range conns {
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	b.loops.Wait()
	waitTimeout(&b.connWG, 10*time.Second)
	if err := b.keepOnFull("delayed delivery state", "it keeps its last saved version (a restart delivers again what was delivered since)",
		b.delay.Close()); err != nil {
		errs = append(errs, err)
	}
	if b.web != nil {
		b.web.close()
	}
	// On a full disk each file keeps its last saved version (diskfull.go).
	if err := b.keepOnFull("consumerOffset.json", "it keeps its last saved version (consumers resume from there)",
		b.offsets.Save(true)); err != nil {
		errs = append(errs, err)
	}
	if err := b.keepOnFull("topics.json", "it keeps its last saved version", b.topics.save()); err != nil {
		errs = append(errs, err)
	}
	if err := b.topics.closeLog(); err != nil {
		errs = append(errs, fmt.Errorf("broker: close the topic log: %w", err))
	}
	if started {
		b.reg.unregisterAll()
	}
	b.reg.close()
	b.repl.close()
	b.acl.close()
	if err := b.store.Close(); err != nil && !errors.Is(err, storage.ErrDiskFullAtClose) {
		errs = append(errs, fmt.Errorf("broker: close store: %w", err))
	} else if err != nil {
		b.log.Warn("broker: disk full at shutdown: the store closed uncleanly; nothing acknowledged is lost and the next start recovers it",
			"err", err)
	}
	b.log.Info("broker: closed", "name", b.cfg.BrokerName)
	return errors.Join(errs...)
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// requestHandler answers one request; it returns nil for no answer (a one-way
// request) or held when it keeps the request to answer later.
type requestHandler func(c *conn, req *protocol.Command) *protocol.Command

// dispatch runs req's handler, or answers REQUEST_CODE_NOT_SUPPORTED.
func (b *Broker) dispatch(c *conn, req *protocol.Command) *protocol.Command {
	if b.acl != nil {
		if resp := b.aclCheck(c, req); resp != nil {
			return resp
		}
	}
	if p, ok := b.handlers[req.Code]; ok {
		return p(c, req)
	}
	return protocol.NewResponse(req, protocol.RequestCodeNotSupported,
		fmt.Sprintf("request code %d (%s) is not supported by this broker", req.Code, protocol.RequestName(req.Code)))
}
