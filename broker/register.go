package broker

import (
	"sync"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// registrar keeps the broker registered with every configured name server:
// REGISTER_BROKER with the whole topic table every RegisterNameServerPeriod
// and at once after a topic change, UNREGISTER_BROKER on a clean shutdown.
type registrar struct {
	b   *Broker
	rpc *rpcClient
	// mu serialises registrations so name servers see data versions in
	// order.
	mu sync.Mutex
}

func newRegistrar(b *Broker) *registrar {
	return &registrar{b: b, rpc: newRPCClient(b.cfg.MaxFrameSize, b.net.tlsClient).signedBy(b.cfg.AccessKey, b.cfg.SecretKey)}
}

// run is the registrar's goroutine: a registration every period until the
// broker stops.
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
			r.registerAll(false)
		case <-fast.C:
			if r.b.repl.isSlave() && (r.b.repl.MasterAddr() == "" || r.b.repl.ctl != nil && r.b.repl.HAMasterAddr() == "") {
				r.registerAll(false)
			}
		case <-r.b.stop:
			return
		}
	}
}

// topicsChanged re-registers now, so routes for a new topic exist when the
// request that created it is answered (RocketMQ registers synchronously
// too).
func (r *registrar) topicsChanged() {
	if r.b.ln != nil {
		r.registerAll(false)
	}
}

// registerAll registers with every name server in parallel and waits for
// them (each bounded by RegisterBrokerTimeout); failures are logged, the
// next period retries. first logs successes too. A slave learns its
// master from the answers (RegisterBrokerResponseHeader's masterAddr and
// haServerAddr): the first answer that names one, or none when no answer
// does (RocketMQ reads the first answer only; a name server that restarted
// and has not heard from the master yet should not hide it).
func (r *registrar) registerAll(first bool) {
	addrs := r.b.cfg.NamesrvAddrs
	if len(addrs) == 0 || r.b.Addr() == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	tw := r.b.topicWrapper()
	tw.DataVersion.StateVersion = r.b.repl.stateVersion()
	body, err := protocol.MarshalBody(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: tw})
	if err != nil {
		r.b.log.Error("broker: encode registration", "err", err)
		return
	}
	h := protocol.RegisterBrokerRequestHeader{BrokerName: r.b.cfg.BrokerName, BrokerAddr: r.b.Addr(),
		ClusterName: r.b.cfg.BrokerClusterName, HAServerAddr: r.b.repl.HAAddr(), BrokerID: r.b.repl.registrationID(),
		BodyCrc32: protocol.BodyCRC32(body)}
	answers := make([]*protocol.RegisterBrokerResponseHeader, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := protocol.NewRequest(protocol.RegisterBroker, h.Encode(), body)
			resp, err := r.rpc.call(a, req, r.b.cfg.RegisterBrokerTimeout)
			switch {
			case err != nil:
				r.b.log.Warn("broker: register with name server failed", "namesrv", a, "err", err)
				return
			case resp.Code != protocol.Success:
				r.b.log.Warn("broker: name server refused registration", "namesrv", a, "code", resp.Code, "remark", resp.Remark)
				return
			case first:
				r.b.log.Info("broker: registered with name server", "namesrv", a, "addr", r.b.Addr())
			}
			var rh protocol.RegisterBrokerResponseHeader
			if err := rh.Decode(resp.ExtFields); err == nil {
				answers[i] = &rh
			}
		}()
	}
	wg.Wait()
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
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := protocol.NewRequest(protocol.UnregisterBroker, h.Encode(), nil)
			if resp, err := r.rpc.call(a, req, r.b.cfg.RegisterBrokerTimeout); err != nil {
				r.b.log.Warn("broker: unregister from name server failed", "namesrv", a, "err", err)
			} else if resp.Code != protocol.Success {
				r.b.log.Warn("broker: name server refused unregistration", "namesrv", a, "code", resp.Code, "remark", resp.Remark)
			}
		}()
	}
	wg.Wait()
}

func (r *registrar) close() { r.rpc.close() }
