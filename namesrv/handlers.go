package namesrv

import (
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// handle answers one request. Every request gets an answer (nil only for
// nothing to say): unknown codes get REQUEST_CODE_NOT_SUPPORTED, requests
// that do not decode get SYSTEM_ERROR with the reason, as RocketMQ does.
func (s *Server) handle(c *conn, req *protocol.Command) *protocol.Command {
	if s.acl != nil {
		if resp := s.aclCheck(c, req); resp != nil {
			return resp
		}
	}
	switch req.Code {
	case protocol.RegisterBroker:
		return s.registerBroker(c, req)
	case protocol.UnregisterBroker:
		return s.unregisterBroker(req)
	case protocol.BrokerHeartbeat:
		return s.brokerHeartbeat(req)
	case protocol.QueryDataVersion:
		return s.queryDataVersion(req)
	case protocol.GetRouteInfoByTopic:
		return s.getRouteInfo(req)
	case protocol.GetBrokerClusterInfo:
		s.mu.RLock()
		ci := s.mu.routes.ClusterInfo()
		s.mu.RUnlock()
		return protocol.NewBodyResponse(req, ci)
	case protocol.GetAllTopicListFromNameServer:
		s.mu.RLock()
		tl := protocol.TopicList{TopicList: s.mu.routes.Topics()}
		s.mu.RUnlock()
		return protocol.NewBodyResponse(req, tl)
	case protocol.DeleteTopicInNamesrv:
		var h protocol.DeleteTopicRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return badRequest(req, err)
		}
		s.mu.Lock()
		s.mu.routes.DeleteTopic(h.Topic, h.ClusterName)
		s.mu.Unlock()
		return protocol.NewResponse(req, protocol.Success, "")
	case protocol.PutKVConfig, protocol.GetKVConfig, protocol.DeleteKVConfig, protocol.GetKVListByNamespace:
		return s.kvConfig(req)
	}
	return protocol.NewResponse(req, protocol.RequestCodeNotSupported,
		fmt.Sprintf("request code %d (%s) not supported by the Samsa name server", req.Code, protocol.RequestName(req.Code)))
}

func badRequest(req *protocol.Command, err error) *protocol.Command {
	return protocol.NewResponse(req, protocol.SystemError, err.Error())
}

func (s *Server) registerBroker(c *conn, req *protocol.Command) *protocol.Command {
	var h protocol.RegisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	if h.BodyCrc32 != 0 && protocol.BodyCRC32(req.Body) != h.BodyCrc32 {
		s.log.Warn("register broker: body crc32 mismatch", "broker", h.BrokerName, "addr", h.BrokerAddr)
		return protocol.NewResponse(req, protocol.SystemError, "crc32 not match")
	}
	body, err := protocol.DecodeRegisterBrokerBodyLimit(req.Body, h.Compressed, req.Version, s.opts.MaxFrame)
	if err != nil {
		s.log.Warn("register broker: bad body", "broker", h.BrokerName, "addr", h.BrokerAddr, "err", err)
		return badRequest(req, err)
	}
	reg := Registration{Header: h, Body: *body, ZoneName: req.Ext("zoneName"), Conn: c.id}
	s.mu.Lock()
	if _, known := s.mu.routes.DataVersion(h.ClusterName, h.BrokerAddr); h.Incremental && !known {
		// The changes alone from a broker this name server does not hold
		// (it restarted, or dropped the broker): the broker's other
		// topics would be missing, so it is told to register in full.
		s.mu.Unlock()
		return protocol.NewResponse(req, protocol.SystemError, protocol.RegisterInFullRemark)
	}
	if err := s.mu.routes.CheckRegistration(reg); err != nil {
		// A broker already registered keeps its liveness and its routes
		// as they were: refusing its new state must not make it expire.
		kept := s.mu.routes.Touch(h.ClusterName, h.BrokerAddr)
		s.mu.Unlock()
		s.log.Warn("register broker refused", "broker", h.BrokerName, "addr", h.BrokerAddr, "keptAlive", kept, "err", err)
		return refuseRegistration(req, err)
	}
	res := s.mu.routes.RegisterBroker(reg)
	orderConf, haveOrderConf := s.mu.routes.KVList(protocol.NamespaceOrderTopicConfig)
	s.mu.Unlock()
	switch {
	case res.Ignored:
		s.log.Warn("register broker ignored: another address holds the id with a newer state",
			"cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID, "addr", h.BrokerAddr)
	case res.New:
		s.log.Info("broker registered", "cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID,
			"addr", h.BrokerAddr, "topics", len(body.TopicConfigSerializeWrapper.TopicConfigTable))
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	rh := protocol.RegisterBrokerResponseHeader{HAServerAddr: res.HAServerAddr, MasterAddr: res.MasterAddr}
	resp.ExtFields = rh.Encode()
	if haveOrderConf {
		if b, err := protocol.MarshalBody(protocol.KVTable{Table: orderConf}); err == nil {
			resp.Body = b
		}
	}
	return resp
}

func (s *Server) unregisterBroker(req *protocol.Command) *protocol.Command {
	var h protocol.UnregisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	s.mu.Lock()
	s.mu.routes.UnregisterBroker(h)
	s.mu.Unlock()
	s.log.Info("broker unregistered", "cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID, "addr", h.BrokerAddr)
	return protocol.NewResponse(req, protocol.Success, "")
}

func (s *Server) brokerHeartbeat(req *protocol.Command) *protocol.Command {
	var h protocol.BrokerHeartbeatRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	s.mu.Lock()
	s.mu.routes.Touch(h.ClusterName, h.BrokerAddr)
	s.mu.Unlock()
	return protocol.NewResponse(req, protocol.Success, "")
}

func (s *Server) queryDataVersion(req *protocol.Command) *protocol.Command {
	var h protocol.QueryDataVersionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	var dv protocol.DataVersion
	if err := protocol.UnmarshalBody(req.Body, &dv); err != nil {
		return badRequest(req, err)
	}
	s.mu.Lock()
	changed := s.mu.routes.DataVersionChanged(h.ClusterName, h.BrokerAddr, dv)
	s.mu.routes.Touch(h.ClusterName, h.BrokerAddr)
	held, ok := s.mu.routes.DataVersion(h.ClusterName, h.BrokerAddr)
	s.mu.Unlock()
	resp := protocol.NewResponse(req, protocol.Success, "")
	rh := protocol.QueryDataVersionResponseHeader{Changed: changed}
	resp.ExtFields = rh.Encode()
	if ok {
		resp.Body, _ = protocol.MarshalBody(held)
	}
	return resp
}

func (s *Server) getRouteInfo(req *protocol.Command) *protocol.Command {
	var h protocol.GetRouteInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	s.mu.RLock()
	rd, ok := s.mu.routes.Route(h.Topic)
	s.mu.RUnlock()
	if !ok {
		return protocol.NewResponse(req, protocol.TopicNotExist, "No topic route info in name server for the topic: "+h.Topic)
	}
	return protocol.NewBodyResponse(req, rd)
}

func (s *Server) kvConfig(req *protocol.Command) *protocol.Command {
	switch req.Code {
	case protocol.PutKVConfig:
		var h protocol.PutKVConfigRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return badRequest(req, err)
		}
		s.mu.Lock()
		err := s.mu.routes.PutKV(h.Namespace, h.Key, h.Value)
		s.mu.Unlock()
		if err != nil {
			return protocol.NewResponse(req, protocol.SystemError, "put KV config refused: "+err.Error())
		}
		return protocol.NewResponse(req, protocol.Success, "")
	case protocol.DeleteKVConfig:
		var h protocol.DeleteKVConfigRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return badRequest(req, err)
		}
		s.mu.Lock()
		s.mu.routes.DeleteKV(h.Namespace, h.Key)
		s.mu.Unlock()
		return protocol.NewResponse(req, protocol.Success, "")
	case protocol.GetKVListByNamespace:
		ns := req.Ext("namespace")
		s.mu.RLock()
		table, ok := s.mu.routes.KVList(ns)
		s.mu.RUnlock()
		if !ok {
			return protocol.NewResponse(req, protocol.QueryNotFound, "No config item, Namespace: "+ns)
		}
		return protocol.NewBodyResponse(req, protocol.KVTable{Table: table})
	}
	var h protocol.GetKVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	s.mu.RLock()
	v, ok := s.mu.routes.GetKV(h.Namespace, h.Key)
	s.mu.RUnlock()
	if !ok {
		return protocol.NewResponse(req, protocol.QueryNotFound, "No config item, Namespace: "+h.Namespace+" Key: "+h.Key)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	rh := protocol.GetKVConfigResponseHeader{Value: v}
	resp.ExtFields = rh.Encode()
	return resp
}
