// Package ctlclient is the client of the replicated fail-over controller
// (package raftctl): brokers register, heartbeat and alter their sync-state
// set through it, tools show a group and force an election.
//
// It is given the addresses of the controller replicas' servers. It sends
// to the leader it last found; on CONTROLLER_NOT_LEADER it follows the
// leader the answer names (or, when none is named, tries the next address),
// and on a connection error it drops the connection and tries the next
// address, with a pause after each full round (100 ms doubling to 1 s),
// until ctx ends or MaxAttempts tries are spent. A refusal of the command itself (fenced,
// stale set epoch, register first...) is returned at once with the Result
// the controller sent and an error that errors.Is-matches the controller's
// Err value.
//
// Register, AlterSyncStateSet and ElectMaster are replicated through Raft
// before the answer, so a retried one after a lost answer may apply twice:
// registering twice is harmless, a repeated alter or election is refused
// as stale (its epoch moved) and changes nothing.
//
// A Client is safe for concurrent use; each connection carries one request
// at a time (controller traffic is a few requests a second per broker).
package ctlclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/controller/raftctl"
	"github.com/samsamq/samsa/protocol"
)

// Options configure a Client.
type Options struct {
	// Addrs are the controller replicas' server addresses (host:port).
	// Required.
	Addrs []string
	// DialTimeout bounds one connection attempt (default 3 s).
	DialTimeout time.Duration
	// MaxAttempts bounds the tries of one call across replicas (default
	// 16 per address, at least 32: with the pauses below, about 12 s, enough
	// to ride out a Raft election); ctx bounds it in time, usually sooner.
	MaxAttempts int
	// RetryPause is slept after the first round over all addresses without
	// an answer (default 100 ms); it doubles after each further round up to
	// MaxRetryPause (default 1 s).
	RetryPause    time.Duration
	MaxRetryPause time.Duration
	// MaxFrame bounds an answer (default 4 MiB).
	MaxFrame int
	// TLS, if set, is used for every connection (a controller run with
	// Options.TLS enforcing or permissive); its ServerName defaults to the
	// address's host.
	TLS *tls.Config
	// AccessKey and SecretKey, if set, sign every request (RocketMQ's plain
	// ACL) for a controller run with an ACL; the account must be admin.
	AccessKey, SecretKey string
	// Logger, if set, is told (at info) each time the client moves to
	// another replica and why: a controller fail-over, as a broker saw it.
	Logger *slog.Logger
}

// Client talks to a replicated controller.
type Client struct {
	opts Options
	mu   struct {
		sync.Mutex
		leader string           // address to try first
		conns  map[string]*conn // by address
		closed bool
	}
}

// ErrClosed: the client was closed.
var ErrClosed = errors.New("ctlclient: closed")

// New makes a client; it connects lazily.
func New(opts Options) (*Client, error) {
	if len(opts.Addrs) == 0 {
		return nil, errors.New("ctlclient: no controller address")
	}
	for _, a := range opts.Addrs {
		if strings.TrimSpace(a) == "" {
			return nil, fmt.Errorf("ctlclient: empty address in %q", opts.Addrs)
		}
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 3 * time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = max(16*len(opts.Addrs), 32)
	}
	if opts.RetryPause <= 0 {
		opts.RetryPause = 100 * time.Millisecond
	}
	if opts.MaxRetryPause < opts.RetryPause {
		opts.MaxRetryPause = max(time.Second, opts.RetryPause)
	}
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = 4 << 20
	}
	c := &Client{opts: opts}
	c.mu.leader = opts.Addrs[0]
	c.mu.conns = map[string]*conn{}
	return c, nil
}

// Close closes every connection. Calls after it fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.closed = true
	for a, cn := range c.mu.conns {
		cn.close()
		delete(c.mu.conns, a)
	}
	return nil
}

// Leader is the address the client sends to first.
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.leader
}

// RegisterBroker registers (or re-registers) a broker replica.
func (c *Client) RegisterBroker(ctx context.Context, cmd controller.RegisterBroker) (controller.Result, error) {
	rep, err := c.call(ctx, protocol.ControllerRegisterBroker, cmd)
	return rep.Result, err
}

// Heartbeat tells the controller leader the broker is alive.
func (c *Client) Heartbeat(ctx context.Context, cmd controller.Heartbeat) (controller.Result, error) {
	rep, err := c.call(ctx, protocol.BrokerHeartbeat, cmd)
	return rep.Result, err
}

// AlterSyncStateSet is the master's change of its sync-state set.
func (c *Client) AlterSyncStateSet(ctx context.Context, cmd controller.AlterSyncStateSet) (controller.Result, error) {
	rep, err := c.call(ctx, protocol.ControllerAlterSyncStateSet, cmd)
	return rep.Result, err
}

// Show describes group g (master, epochs, sync-state set) and its
// replicas, from the leader.
func (c *Client) Show(ctx context.Context, g controller.Group) (controller.Result, map[int64]string, error) {
	rep, err := c.call(ctx, protocol.ControllerGetReplicaInfo, g)
	return rep.Result, rep.Replicas, err
}

// ElectMaster asks the leader to elect a master for g now from its
// liveness (admin). An alive master stays. unclean is the operator's
// explicit choice to elect the most up-to-date alive replica even when it
// lacks messages the group acknowledged (they are lost).
func (c *Client) ElectMaster(ctx context.Context, g controller.Group, unclean bool) (controller.Result, error) {
	rep, err := c.call(ctx, protocol.ControllerElectMaster, raftctl.ElectRequest{Group: g, Unclean: unclean})
	return rep.Result, err
}

// ShowPositions is Show with where each replica last reported its log
// stood.
func (c *Client) ShowPositions(ctx context.Context, g controller.Group) (raftctl.Reply, error) {
	return c.call(ctx, protocol.ControllerGetReplicaInfo, g)
}

// Metadata asks the replica at addr (not necessarily the leader) who it
// is and whom it takes for the leader.
func (c *Client) Metadata(ctx context.Context, addr string) (raftctl.Metadata, error) {
	var md raftctl.Metadata
	resp, err := c.roundTrip(ctx, addr, protocol.ControllerGetMetadataInfo, struct{}{})
	if err != nil {
		return md, err
	}
	if resp.Code != protocol.Success {
		return md, raftctl.ErrorOf(resp.Code, resp.Remark)
	}
	if err := protocol.UnmarshalBody(resp.Body, &md); err != nil {
		return md, fmt.Errorf("ctlclient: metadata from %s: %w", addr, err)
	}
	return md, nil
}

// call sends one request, following the leader. See the package doc.
func (c *Client) call(ctx context.Context, code int32, body any) (raftctl.Reply, error) {
	var rep raftctl.Reply
	rep.Result.MasterID = controller.NoMaster
	var lastErr error
	tried := 0 // addresses tried since the last pause
	pause := c.opts.RetryPause
	for attempt := 0; attempt < c.opts.MaxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("ctlclient: %w (last: %v)", err, lastErr)
		}
		if tried >= len(c.opts.Addrs) {
			tried = 0
			t := time.NewTimer(pause)
			pause = min(2*pause, c.opts.MaxRetryPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return rep, fmt.Errorf("ctlclient: %w (last: %v)", ctx.Err(), lastErr)
			case <-t.C:
			}
		}
		addr := c.Leader()
		resp, err := c.roundTrip(ctx, addr, code, body)
		tried++
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return rep, err
			}
			lastErr = fmt.Errorf("%s: %w", addr, err)
			c.next(addr, "", err.Error())
			continue
		}
		var got raftctl.Reply
		if len(resp.Body) > 0 {
			if err := protocol.UnmarshalBody(resp.Body, &got); err != nil {
				return rep, fmt.Errorf("ctlclient: answer from %s: %w", addr, err)
			}
			rep = got
		}
		if resp.Code == protocol.ControllerNotLeader {
			lastErr = fmt.Errorf("%s: %s", addr, resp.Remark)
			c.next(addr, resp.ExtFields[raftctl.ExtLeaderAddr], resp.Remark)
			continue
		}
		return rep, raftctl.ErrorOf(resp.Code, resp.Remark)
	}
	return rep, fmt.Errorf("ctlclient: no controller leader answered after %d attempts: %v", c.opts.MaxAttempts, lastErr)
}

// next moves the leader guess after a failure at addr: to hint when the
// answer named one, else to the address after addr.
func (c *Client) next(addr, hint, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.leader != addr {
		return // another call moved it already
	}
	switch i := slices.Index(c.opts.Addrs, addr); {
	case hint != "" && hint != addr:
		c.mu.leader = hint
	case i >= 0:
		c.mu.leader = c.opts.Addrs[(i+1)%len(c.opts.Addrs)]
	default:
		c.mu.leader = c.opts.Addrs[0]
	}
	if c.opts.Logger != nil {
		c.opts.Logger.Info("ctlclient: trying another controller replica", "from", addr, "to", c.mu.leader, "hinted", hint != "", "why", why)
	}
}

func (c *Client) roundTrip(ctx context.Context, addr string, code int32, body any) (*protocol.Command, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	cn := c.mu.conns[addr]
	if cn == nil {
		cn = &conn{addr: addr, dialTimeout: c.opts.DialTimeout, maxFrame: c.opts.MaxFrame, tls: c.opts.TLS}
		c.mu.conns[addr] = cn
	}
	c.mu.Unlock()
	b, err := protocol.MarshalBody(body)
	if err != nil {
		return nil, err
	}
	req := protocol.NewRequest(code, map[string]string{raftctl.ExtDialect: raftctl.DialectJSON1}, b)
	if c.opts.AccessKey != "" {
		acl.SignCommand(req, c.opts.AccessKey, c.opts.SecretKey, "")
	}
	return cn.do(ctx, req)
}
