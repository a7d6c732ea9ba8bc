package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/client/internal/remoting"
	"github.com/samsamq/samsa/protocol"
)

// instance is what a producer or consumer runs on: its client id, the
// connections (one remoting.Client), the name servers, the route cache
// and the background loops. RocketMQ's MQClientInstance, but owned by one
// producer or consumer: nothing is shared between them.
type instance struct {
	opts     ClientOptions
	clientID string
	rc       *remoting.Client
	nsIndex  atomic.Uint32 // the name server to ask first

	stop chan struct{} // closed by close
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		closed     bool
		refreshing map[string]bool // topics with a refreshSoon under way
		routes     map[string]*routeEntry
		brokers    map[string]protocol.BrokerData // every broker of every route, by name
		// pullFrom is the broker id the last pull answer of a queue
		// suggested (pullroute.go); absent means the master.
		pullFrom map[MessageQueue]int64
	}
}

// routeEntry is a topic's cached route, or a fetch under way.
type routeEntry struct {
	ready chan struct{} // closed when the first fetch ended
	route *topicRoute   // the latest good route
	err   error         // the first fetch's error, if it failed
}

func newInstance(opts ClientOptions, onRequest func(addr string, req *protocol.Command) *protocol.Command) *instance {
	in := &instance{opts: opts, clientID: localIPv4().String() + "@" + opts.InstanceName, stop: make(chan struct{})}
	st := protocol.SerializeRocketMQ
	if opts.JSONHeaders {
		st = protocol.SerializeJSON
	}
	ro := remoting.Options{
		Serialize:   st,
		Timeout:     opts.RequestTimeout,
		DialTimeout: opts.DialTimeout,
		OnRequest:   onRequest,
		Logger:      opts.Logger,
		TLS:         opts.TLS,
	}
	if cr := opts.Credentials; cr.AccessKey != "" {
		ro.RPCHook = remoting.SignWith(cr.AccessKey, cr.SecretKey, cr.SecurityToken)
	}
	in.rc = remoting.New(ro)
	in.mu.routes = map[string]*routeEntry{}
	in.mu.refreshing = map[string]bool{}
	in.mu.brokers = map[string]protocol.BrokerData{}
	in.mu.pullFrom = map[MessageQueue]int64{}
	return in
}

// every runs fn every d until close (and once at once when now is set),
// in a goroutine of its own.
func (in *instance) every(d time.Duration, now bool, fn func(ctx context.Context)) {
	if !in.goAdd() {
		return
	}
	go func() {
		defer in.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-in.stop
			cancel()
		}()
		if now {
			fn(ctx)
		}
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-in.stop:
				return
			case <-t.C:
				fn(ctx)
			}
		}
	}()
}

// goAdd counts a goroutine about to start, unless the instance is closed.
func (in *instance) goAdd() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.mu.closed {
		return false
	}
	in.wg.Add(1)
	return true
}

// close stops the loops and then the connections.
func (in *instance) close() {
	in.mu.Lock()
	if in.mu.closed {
		in.mu.Unlock()
		return
	}
	in.mu.closed = true
	close(in.stop)
	in.mu.Unlock()
	in.wg.Wait()
	_ = in.rc.Close() // its connections are dropped: nothing to report
}

// refreshSoon refreshes topic's route in the background (once at a time
// per topic): after a failed send.
func (in *instance) refreshSoon(topic string) {
	in.mu.Lock()
	if in.mu.refreshing[topic] || in.mu.closed {
		in.mu.Unlock()
		return
	}
	in.mu.refreshing[topic] = true
	in.wg.Add(1)
	in.mu.Unlock()
	go func() {
		defer in.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), in.opts.RequestTimeout)
		defer cancel()
		in.refreshRoute(ctx, topic)
		in.mu.Lock()
		delete(in.mu.refreshing, topic)
		in.mu.Unlock()
	}()
}

// ctxTimeout gives ctx the request timeout when it has no deadline.
func (in *instance) ctxTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, in.opts.RequestTimeout)
}

// invoke sends req to addr and returns a Success answer, or the error
// answer as a *ResponseError.
func (in *instance) invoke(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	resp, err := in.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != protocol.Success {
		return resp, responseError(addr, resp)
	}
	return resp, nil
}

// invokeNameServer sends req to the name servers in turn until one
// answers (with anything: an error answer is not retried elsewhere).
func (in *instance) invokeNameServer(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
	resp, _, err := in.invokeNameServerFrom(ctx, req)
	return resp, err
}

// invokeNameServerFrom is invokeNameServer, and says which name server
// answered. When none did, the error names each one with its failure.
func (in *instance) invokeNameServerFrom(ctx context.Context, req *protocol.Command) (*protocol.Command, string, error) {
	ns := in.opts.NameServers
	first := int(in.nsIndex.Load())
	var errs []error
	for i := 0; i < len(ns); i++ {
		k := (first + i) % len(ns)
		r := *req // a fresh opaque per attempt
		resp, err := in.rc.Invoke(ctx, ns[k], &r)
		if err == nil {
			in.nsIndex.Store(uint32(k))
			if resp.Code != protocol.Success {
				return resp, ns[k], responseError(ns[k], resp)
			}
			return resp, ns[k], nil
		}
		errs = append(errs, fmt.Errorf("name server %s: %w", ns[k], err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", fmt.Errorf("client: no name server answered: %w", errors.Join(errs...))
}

// brokerAddrs returns the address of every broker (masters first, then
// slaves) in the cached routes; mastersOnly leaves the slaves out.
func (in *instance) brokerAddrs(mastersOnly bool) []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for _, b := range in.mu.brokers {
		for id, a := range b.BrokerAddrs {
			if a != "" && (id == protocol.MasterID || !mastersOnly) {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// brokerAddr returns the address of broker name: its master, or when it
// has none and slaveOK, its lowest-numbered slave. "" when unknown.
func (in *instance) brokerAddr(name string, slaveOK bool) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	b, ok := in.mu.brokers[name]
	if !ok {
		return ""
	}
	return pickAddr(b, slaveOK)
}

func pickAddr(b protocol.BrokerData, slaveOK bool) string {
	if a := b.BrokerAddrs[protocol.MasterID]; a != "" {
		return a
	}
	if !slaveOK {
		return ""
	}
	best, addr := int64(-1), ""
	for id, a := range b.BrokerAddrs {
		if a != "" && (best < 0 || id < best) {
			best, addr = id, a
		}
	}
	return addr
}

// heartbeat sends data to every broker in the routes (masters only for a
// producer-only heartbeat). Failures are logged: the next beat retries.
func (in *instance) heartbeat(ctx context.Context, data *protocol.HeartbeatData, mastersOnly bool) {
	data.ClientID = in.clientID
	body, err := protocol.MarshalBody(data)
	if err != nil {
		in.opts.Logger.Error("client: heartbeat body", "err", err)
		return
	}
	var wg sync.WaitGroup
	for _, addr := range in.brokerAddrs(mastersOnly) {
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			hctx, cancel := in.ctxTimeout(ctx)
			defer cancel()
			var ext map[string]string
			if !in.opts.SkipCRCCheck {
				ext = map[string]string{protocol.ExtClientChecksCRC: "true"}
			}
			if _, err := in.invoke(hctx, addr, protocol.NewRequest(protocol.HeartBeat, ext, body)); err != nil {
				in.opts.Logger.Debug("client: heartbeat failed", "broker", addr, "err", err)
			}
		}(addr)
	}
	wg.Wait()
}

// unregister tells every broker this client's group is gone.
func (in *instance) unregister(ctx context.Context, producerGroup, consumerGroup string) {
	h := protocol.UnregisterClientRequestHeader{ClientID: in.clientID, ProducerGroup: producerGroup, ConsumerGroup: consumerGroup}
	var wg sync.WaitGroup
	for _, addr := range in.brokerAddrs(false) {
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			uctx, cancel := in.ctxTimeout(ctx)
			defer cancel()
			if _, err := in.invoke(uctx, addr, protocol.NewRequest(protocol.UnregisterClient, h.Encode(), nil)); err != nil {
				in.opts.Logger.Debug("client: unregister failed", "broker", addr, "err", err)
			}
		}(addr)
	}
	wg.Wait()
}

// ctxErr is the error of a context that ended: ErrTimeout (matching
// context.DeadlineExceeded too) for a deadline, else the context's error.
func ctxErr(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("client: %s: %w (%w)", what, ErrTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("client: %s: %w", what, ctx.Err())
}
