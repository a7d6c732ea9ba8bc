package raftctl

import (
	"fmt"
	"net/netip"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/protocol"
)

// aclCheck decides req when Options.ACL is set (nil allows it): RocketMQ's
// plain ACL as the name server checks it (white lists, account,
// signature), and beyond it every controller code but
// CONTROLLER_GET_METADATA_INFO needs an admin account, as registering
// with a name server does: a broker, or an operator. The refusal answers
// NO_PERMISSION with the reason.
func (s *server) aclCheck(c *sconn, req *protocol.Command) *protocol.Command {
	if s.opts.ACL == nil {
		return nil
	}
	remote := netip.Addr{}
	if ap, err := netip.ParseAddrPort(c.nc.RemoteAddr().String()); err == nil {
		remote = ap.Addr().Unmap()
	}
	g, d := s.opts.ACL.Config().Check(acl.Request{Code: req.Code, Ext: req.ExtFields, Body: req.Body, Remote: remote})
	if d == nil && !g.Admin && req.Code != protocol.ControllerGetMetadataInfo {
		d = &acl.Denied{Reason: acl.ReasonNotAdmin, Remark: fmt.Sprintf("access denied: request %s(%d) to the controller needs an admin account; accessKey %q is not admin",
			protocol.RequestName(req.Code), req.Code, g.AccessKey)}
	}
	if d == nil {
		return nil
	}
	s.log.Info("request refused by ACL", "remote", c.nc.RemoteAddr().String(), "code", req.Code, "reason", d.Reason)
	return protocol.NewResponse(req, protocol.NoPermission, d.Remark)
}
