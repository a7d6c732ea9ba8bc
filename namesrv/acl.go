package namesrv

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/protocol"
)

// Access control (Options.ACLEnable): one check at the top of handle,
// RocketMQ's plain ACL rules (package acl). Beyond them, a broker name is
// bound to the account (or, for a white-listed unsigned broker, the
// address) that registered it while the registration lives: another
// account may not register or unregister that name. Every refusal answers
// NO_PERMISSION with the reason as remark and is counted (ACLDenied).
type nsACL struct {
	store  *acl.Store
	denied acl.Counters
	mu     struct {
		sync.Mutex
		owners map[string]string // broker name → owner
	}
}

func openACL(o *Options) (*nsACL, error) {
	if !o.ACLEnable {
		return nil, nil
	}
	s, err := acl.Open(o.ACLFile, o.ACLReloadInterval, o.Logger)
	if err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	a := &nsACL{store: s}
	a.mu.owners = make(map[string]string)
	return a, nil
}

func (a *nsACL) close() {
	if a != nil {
		a.store.Close()
	}
}

// ACLDenied lists the requests refused by access control, by reason and
// request (nil with ACL off).
func (s *Server) ACLDenied() []acl.Count {
	if s.acl == nil {
		return nil
	}
	return s.acl.denied.Snapshot()
}

// aclCheck decides req; nil allows it.
func (s *Server) aclCheck(c *conn, req *protocol.Command) *protocol.Command {
	remote := remoteIP(c)
	g, d := s.acl.store.Config().Check(acl.Request{Code: req.Code, Ext: req.ExtFields, Body: req.Body, Remote: remote})
	if d == nil && (req.Code == protocol.RegisterBroker || req.Code == protocol.UnregisterBroker) {
		owner := "accessKey " + g.AccessKey
		if g.AccessKey == "" {
			owner = "address " + remote.String()
		}
		d = s.bindBroker(req.Ext("brokerName"), owner, req.Code == protocol.RegisterBroker)
	}
	if d == nil {
		return nil
	}
	level := slog.LevelDebug
	if s.acl.denied.Add(d.Reason, req.Code) == 1 {
		level = slog.LevelInfo // the first of its kind; the rest are counted (ACLDenied)
	}
	s.log.Log(context.Background(), level, "request refused by ACL", "remote", c.nc.RemoteAddr().String(), "code", req.Code, "reason", d.Reason, "remark", d.Remark)
	return protocol.NewResponse(req, protocol.NoPermission, d.Remark)
}

// bindBroker lets owner register (bind) or unregister brokerName unless
// another owner holds it while it is registered.
func (s *Server) bindBroker(brokerName, owner string, bind bool) *acl.Denied {
	s.mu.RLock()
	registered := s.mu.routes.hasBroker(brokerName)
	s.mu.RUnlock()
	a := s.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur, ok := a.mu.owners[brokerName]; ok && cur != owner && registered {
		return &acl.Denied{Reason: acl.ReasonForeignBroker,
			Remark: fmt.Sprintf("access denied: broker name %q is registered by another account (%s); %s may not register or unregister it", brokerName, cur, owner)}
	}
	if bind {
		a.mu.owners[brokerName] = owner
	} else if !registered {
		delete(a.mu.owners, brokerName)
	}
	return nil
}

func (t *RouteTable) hasBroker(name string) bool {
	_, ok := t.brokers[name]
	return ok
}

func remoteIP(c *conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.nc.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
