package broker

import (
	"compress/zlib"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// registrar keeps the broker registered with every configured name server,
// at a cost that follows what changed rather than the table's size:
//
//   - a topic change registers the changed topics alone under the new data
//     version (topicsChanged; RocketMQ's registerIncrementBrokerData), and
//     returns once every name server that holds the broker has them, so a
//     create is answered when its topic routes;
//   - every RegisterNameServerPeriod, each name server is asked whether it
//     still holds the broker's data version (QUERY_DATA_VERSION, which
//     also refreshes the broker's liveness); one that does not (it
//     restarted, or missed a change) gets a full registration, and so
//     does every name server every fullEvery periods, and every period
//     while the table fits one chunk (as before: cheap, and it repairs
//     whatever a name server lost);
//   - a full registration of more than registerChunk topics goes as
//     several REGISTER_BROKER frames of registerChunk topics under one data
//     version, deflated (RocketMQ's compressed layout), so no frame nears
//     the limit at any table size.
//
// UNREGISTER_BROKER goes on a clean shutdown. Registrations are serialised
// by mu, so name servers see data versions in order.
type registrar struct {
	b   *Broker
	rpc *rpcClient
	mu  sync.Mutex
	// Under mu:
	ns    map[string]*nsState // by name-server address
	taken uint64              // the changes' seq at the last takeChanges
	ticks int                 // periods run
	// stats count registrations sent, each to one name server.
	stats registerStats
}

// registerStats count what the registrar sent (to all name servers).
type registerStats struct {
	full, incremental, queries, frames, bytes atomic.Uint64
}

// nsState is what the registrar knows one name server holds.
type nsState struct {
	// known: the name server holds the table as of seq, registered
	// under key with data version dv.
	known bool
	seq   uint64
	dv    protocol.DataVersion
	key   regKey
	// retryAt: a full registration failed; until then a topic change
	// does not wait for this name server again (the period retries).
	retryAt time.Time
}

// regKey is what a registration says of the broker besides its topics;
// a name server registered under another key needs a full registration.
type regKey struct {
	addr, ha string
	id       int64
	state    int64
}

const (
	// registerChunk is the most topics one REGISTER_BROKER carries: about
	// 330 KiB of JSON at most before deflating.
	registerChunk = 1024
	// fullEvery: a name server gets a full registration at least every
	// fullEvery periods, whatever its data version says.
	fullEvery = 10
	// registerRetry is how long topic changes skip a name server whose
	// full registration failed.
	registerRetry = 5 * time.Second
)

func newRegistrar(b *Broker) *registrar {
	return &registrar{b: b, rpc: newRPCClient(b.cfg.MaxFrameSize, b.net.tlsClient).signedBy(b.cfg.AccessKey, b.cfg.SecretKey),
		ns: make(map[string]*nsState)}
}

// run is the registrar's goroutine: a check every period until the broker
// stops.
func (r *registrar) run() {
	if len(r.b.cfg.NamesrvAddrs) == 0 {
		return
	}
	t := time.NewTicker(r.b.cfg.RegisterNameServerPeriod)
	defer t.Stop()
	// A slave that knows no master yet (started first, or its master is
	// down) asks every second, so it follows the master within a second
	// of its registration rather than a whole period later; in controller
	// mode every controllerHeartBeatTimeoutMills/15 (200 ms), as its
	// controller heartbeats go while its master may be gone: a slave told
	// of a new master learns its replication address from the name
	// servers, and a SYNC_MASTER's first acknowledgement after a
	// fail-over waits for that slave.
	every := time.Second
	if r.b.repl.ctl != nil {
		every = min(every, max(r.b.cfg.ControllerHeartBeatTimeout/15, 50*time.Millisecond))
	}
	fast := time.NewTicker(every)
	defer fast.Stop()
	for {
		select {
		case <-t.C:
			r.period()
		case <-fast.C:
			if r.b.repl.isSlave() && (r.b.repl.MasterAddr() == "" || r.b.repl.ctl != nil && r.b.repl.HAMasterAddr() == "") {
				r.registerAll(false)
			}
		case <-r.b.stop:
			return
		}
	}
}

// header is the REGISTER_BROKER header as the broker stands now (without
// the body's CRC and the compression flag), and its key.
func (r *registrar) header() (protocol.RegisterBrokerRequestHeader, regKey) {
	h := protocol.RegisterBrokerRequestHeader{BrokerName: r.b.cfg.BrokerName, BrokerAddr: r.b.Addr(),
		ClusterName: r.b.cfg.BrokerClusterName, HAServerAddr: r.b.repl.HAAddr(), BrokerID: r.b.repl.registrationID()}
	return h, regKey{addr: h.BrokerAddr, ha: h.HAServerAddr, id: h.BrokerID, state: r.b.repl.stateVersion()}
}

func (r *registrar) stateLocked(addr string) *nsState {
	st := r.ns[addr]
	if st == nil {
		st = &nsState{}
		r.ns[addr] = st
	}
	return st
}

// topicsChanged registers the topics changed since the last registration
// with every name server, and returns once each holds them (or failed), so
// routes for a new topic exist when the request that created it is
// answered. Callers that found nothing changed call it too: a concurrent
// request may have made the topic and still be registering it. Concurrent
// calls batch: the one that takes mu registers every change made so far,
// and those it covered return at once.
func (r *registrar) topicsChanged() { _ = r.registerChanges() }

// registerChanges is topicsChanged, and says which name servers refused
// the changes for what they carry (a bound: see namesrv.CheckRegistration),
// where a full registration would be refused too.
func (r *registrar) registerChanges() error {
	addrs := r.b.cfg.NamesrvAddrs
	if len(addrs) == 0 {
		r.b.topics.takeChanges() // nobody to tell: forget them
		return nil
	}
	if r.b.ln == nil || r.b.Addr() == "" {
		return nil // the start registers in full
	}
	want := r.b.topics.seq()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	covered := true
	for _, a := range addrs {
		if st := r.stateLocked(a); !(st.known && st.seq >= want) && !now.Before(st.retryAt) {
			covered = false
		}
	}
	if covered {
		return nil
	}
	ch := r.b.topics.takeChanges()
	base := r.taken
	r.taken = ch.seq
	h, key := r.header()
	var inc, full []string
	var refused []error
	for _, a := range addrs {
		st := r.stateLocked(a)
		switch {
		case st.known && st.seq >= ch.seq:
		case !r.b.repl.isSlave() && st.known && st.seq >= base && st.seq >= ch.allSeq && st.key == key:
			inc = append(inc, a)
		case now.Before(st.retryAt):
		default:
			full = append(full, a)
		}
	}
	tcs := r.b.topics.configs(ch.names)
	if len(inc) > 0 && len(tcs) == 0 {
		// Deletions alone: a registration cannot take a topic away (the
		// admin deletes it from the name servers, as mqadmin does), and
		// an empty one would pass for a whole table with a name server
		// that restarted. The name servers keep the version they hold.
		for _, a := range inc {
			r.ns[a].seq = ch.seq
		}
		inc = nil
	}
	if len(inc) > 0 {
		dv := protocol.DataVersion{StateVersion: key.state, Timestamp: ch.version.Timestamp, Counter: ch.version.Counter}
		body, err := registerBody(tcs, dv)
		if err != nil {
			r.b.log.Error("broker: encode registration", "err", err)
			return err
		}
		h.Incremental = true
		h.BodyCrc32 = protocol.BodyCRC32(body)
		errs := make([]error, len(inc))
		answers := make([]*protocol.RegisterBrokerResponseHeader, len(inc))
		parallel(inc, func(i int, a string) {
			r.stats.incremental.Add(1)
			answers[i], errs[i] = r.send(a, h, body)
		})
		for i, a := range inc {
			var re *refusedError
			switch {
			case errs[i] == nil:
				st := r.ns[a]
				st.seq, st.dv = ch.seq, dv
			case errors.As(errs[i], &re) && re.remark != protocol.RegisterInFullRemark:
				// Refused for what it carries: the whole table would
				// be too. The name server keeps what it held; the
				// changes are not offered again until a full
				// registration (fullEvery) or the next change.
				r.b.log.Warn("broker: name server refused the changed topics", "namesrv", a, "topics", len(tcs), "err", errs[i])
				r.ns[a].seq = ch.seq
				refused = append(refused, fmt.Errorf("name server %s refused the topics' routes: %s", a, re.remark))
			default:
				// A name server that restarted refuses the changes
				// alone (or the request failed): it gets the whole
				// table below.
				r.b.log.Debug("broker: incremental registration failed; registering in full", "namesrv", a, "err", errs[i])
				full = append(full, a)
			}
		}
		r.learn(answers)
	}
	if len(full) > 0 {
		r.fullLocked(full, false)
	}
	return errors.Join(refused...)
}

// registerAll registers the whole table with every name server in
// parallel and waits for them (each request bounded by
// RegisterBrokerTimeout); failures are logged, the next period retries.
// first logs successes too. A slave learns its master from the answers.
func (r *registrar) registerAll(first bool) {
	addrs := r.b.cfg.NamesrvAddrs
	if len(addrs) == 0 || r.b.Addr() == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fullLocked(addrs, first)
}

// period runs every RegisterNameServerPeriod: a full registration where a
// name server may not hold the table, a QUERY_DATA_VERSION elsewhere.
func (r *registrar) period() {
	addrs := r.b.cfg.NamesrvAddrs
	if len(addrs) == 0 || r.b.Addr() == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ticks++
	if r.ticks%fullEvery == 0 || r.b.repl.isSlave() || r.b.topics.count() <= registerChunk {
		r.fullLocked(addrs, false)
		return
	}
	h, key := r.header()
	need := make([]bool, len(addrs))
	parallel(addrs, func(i int, a string) {
		st := r.ns[a]
		if st == nil || !st.known || st.key != key {
			need[i] = true
			return
		}
		changed, err := r.queryDataVersion(a, h, st.dv)
		if err != nil {
			r.b.log.Warn("broker: query data version failed; registering in full", "namesrv", a, "err", err)
		}
		need[i] = err != nil || changed
	})
	var full []string
	for i, a := range addrs {
		if need[i] {
			full = append(full, a)
		}
	}
	if len(full) > 0 {
		r.fullLocked(full, false)
	}
}

// queryDataVersion asks a name server whether it holds dv.
func (r *registrar) queryDataVersion(addr string, h protocol.RegisterBrokerRequestHeader, dv protocol.DataVersion) (changed bool, err error) {
	body, err := protocol.MarshalBody(dv)
	if err != nil {
		return false, err
	}
	r.stats.queries.Add(1)
	qh := protocol.QueryDataVersionRequestHeader{BrokerName: h.BrokerName, BrokerAddr: h.BrokerAddr, ClusterName: h.ClusterName, BrokerID: h.BrokerID}
	resp, err := r.rpc.call(addr, protocol.NewRequest(protocol.QueryDataVersion, qh.Encode(), body), r.b.cfg.RegisterBrokerTimeout)
	if err != nil {
		return false, err
	}
	if resp.Code != protocol.Success {
		return false, fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
	}
	var rh protocol.QueryDataVersionResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return false, err
	}
	return rh.Changed, nil
}

// fullLocked registers the whole table with addrs in parallel and records
// what each now holds.
func (r *registrar) fullLocked(addrs []string, first bool) {
	h, key := r.header()
	names, v, seq := r.b.topics.sortedNames()
	dv := protocol.DataVersion{StateVersion: key.state, Timestamp: v.Timestamp, Counter: v.Counter}
	// The chunks are encoded by one goroutine while they are sent: the
	// name servers decode a chunk while the next is encoded (a million
	// topics: ~1,000 chunks, ~2.5 s of encoding).
	bodies := r.fullBodies(names, dv)
	h.Compressed = len(names) > registerChunk
	answers := make([]*protocol.RegisterBrokerResponseHeader, len(addrs))
	errs := make([]error, len(addrs))
	parallel(addrs, func(i int, a string) {
		r.stats.full.Add(1)
		for k := range bodies.n {
			body, err := bodies.get(k)
			if err != nil {
				r.b.log.Error("broker: encode registration", "err", err)
				errs[i] = err
				return
			}
			h := h
			h.BodyCrc32 = protocol.BodyCRC32(body)
			rh, err := r.send(a, h, body)
			if err != nil {
				errs[i] = err
				return
			}
			answers[i] = rh
		}
	})
	bodies.wait()
	now := time.Now()
	for i, a := range addrs {
		st := r.stateLocked(a)
		if errs[i] != nil {
			r.b.log.Warn("broker: register with name server failed", "namesrv", a, "err", errs[i])
			retry := registerRetry
			if re := (*refusedError)(nil); errors.As(errs[i], &re) {
				retry = max(retry, r.b.cfg.RegisterNameServerPeriod) // refused whole: the period tries again
			}
			*st = nsState{retryAt: now.Add(retry)}
			answers[i] = nil
			continue
		}
		*st = nsState{known: true, seq: seq, dv: dv, key: key}
		if first {
			r.b.log.Info("broker: registered with name server", "namesrv", a, "addr", h.BrokerAddr,
				"topics", len(names), "frames", bodies.n)
		}
	}
	r.learn(answers)
}

// fullBodies encodes the table as REGISTER_BROKER bodies, in a
// goroutine of its own: one JSON body when it fits a chunk, else a
// deflated body a chunk.
func (r *registrar) fullBodies(names []string, dv protocol.DataVersion) *bodyStream {
	n := max(1, (len(names)+registerChunk-1)/registerChunk)
	s := &bodyStream{n: n, bodies: make([][]byte, n), errs: make([]error, n), ready: make([]chan struct{}, n), done: make(chan struct{})}
	for k := range s.ready {
		s.ready[k] = make(chan struct{})
	}
	go func() {
		defer close(s.done)
		if len(names) <= registerChunk {
			s.bodies[0], s.errs[0] = registerBody(r.b.topics.configs(names), dv)
			close(s.ready[0])
			return
		}
		var err error
		for k := range n {
			if err == nil {
				start := k * registerChunk
				tw := wireTopics(r.b.topics.configs(names[start:min(start+registerChunk, len(names))]), dv)
				s.bodies[k], err = (&protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: tw}).EncodeCompressedLevel(protocol.DefaultVersion, zlib.BestSpeed)
			}
			s.errs[k] = err // a failed chunk fails those after it
			close(s.ready[k])
		}
	}()
	return s
}

// bodyStream is a full registration's bodies as fullBodies' goroutine
// encodes them: body k may be read once ready[k] is closed.
type bodyStream struct {
	n      int
	bodies [][]byte
	errs   []error
	ready  []chan struct{}
	done   chan struct{} // closed when the goroutine returns
}

// get waits for body k.
func (s *bodyStream) get(k int) ([]byte, error) {
	<-s.ready[k]
	return s.bodies[k], s.errs[k]
}

// wait returns once the encoding goroutine has (a send that failed stops
// reading early).
func (s *bodyStream) wait() { <-s.done }

// registerBody is a JSON REGISTER_BROKER body of tcs under dv.
func registerBody(tcs []TopicConfig, dv protocol.DataVersion) ([]byte, error) {
	return protocol.MarshalBody(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: wireTopics(tcs, dv)})
}

// wireTopics is tcs in the wire form.
func wireTopics(tcs []TopicConfig, dv protocol.DataVersion) protocol.TopicConfigSerializeWrapper {
	w := protocol.TopicConfigSerializeWrapper{TopicConfigTable: make(map[string]protocol.TopicConfig, len(tcs)), DataVersion: dv}
	for _, tc := range tcs {
		w.TopicConfigTable[tc.TopicName] = tc.wire()
	}
	return w
}

// refusedError is a name server's answer other than success.
type refusedError struct {
	code   int32
	remark string
}

func (e *refusedError) Error() string { return fmt.Sprintf("code %d: %s", e.code, e.remark) }

// send sends one REGISTER_BROKER and decodes its answer's header.
func (r *registrar) send(addr string, h protocol.RegisterBrokerRequestHeader, body []byte) (*protocol.RegisterBrokerResponseHeader, error) {
	r.stats.frames.Add(1)
	r.stats.bytes.Add(uint64(len(body)))
	resp, err := r.rpc.call(addr, protocol.NewRequest(protocol.RegisterBroker, h.Encode(), body), r.b.cfg.RegisterBrokerTimeout)
	if err != nil {
		return nil, err
	}
	if resp.Code != protocol.Success {
		return nil, &refusedError{code: resp.Code, remark: resp.Remark}
	}
	var rh protocol.RegisterBrokerResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	return &rh, nil
}

// learn passes a slave its master from the answers (RegisterBrokerResponseHeader's
// masterAddr and haServerAddr): the first answer that names one, or none
// when no answer does (RocketMQ reads the first answer only; a name server
// that restarted and has not heard from the master yet should not hide
// it).
func (r *registrar) learn(answers []*protocol.RegisterBrokerResponseHeader) {
	var got *protocol.RegisterBrokerResponseHeader
	for _, a := range answers {
		if a != nil && (got == nil || got.MasterAddr == "") {
			got = a
		}
	}
	if got != nil {
		r.b.repl.learnMaster(got.HAServerAddr, got.MasterAddr)
	}
}

// parallel runs f for every address at once and waits for them all.
func parallel(addrs []string, f func(i int, addr string)) {
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i, a)
		}()
	}
	wg.Wait()
}

// unregisterAll tells every name server the broker is leaving.
func (r *registrar) unregisterAll() {
	addrs := r.b.cfg.NamesrvAddrs
	if len(addrs) == 0 || r.b.Addr() == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := protocol.UnregisterBrokerRequestHeader{BrokerName: r.b.cfg.BrokerName, BrokerAddr: r.b.Addr(),
		ClusterName: r.b.cfg.BrokerClusterName, BrokerID: r.b.repl.registrationID()}
	parallel(addrs, func(_ int, a string) {
		req := protocol.NewRequest(protocol.UnregisterBroker, h.Encode(), nil)
		if resp, err := r.rpc.call(a, req, r.b.cfg.RegisterBrokerTimeout); err != nil {
			r.b.log.Warn("broker: unregister from name server failed", "namesrv", a, "err", err)
		} else if resp.Code != protocol.Success {
			r.b.log.Warn("broker: name server refused unregistration", "namesrv", a, "code", resp.Code, "remark", resp.Remark)
		}
	})
	for _, a := range addrs {
		delete(r.ns, a)
	}
}

func (r *registrar) close() { r.rpc.close() }
