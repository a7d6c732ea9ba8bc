package raftctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/protocol"
)

// handle answers one request. A request without our dialect header (a
// Java broker's, whose header-and-protobuf-free bodies differ) and any
// code we do not serve get REQUEST_CODE_NOT_SUPPORTED with the reason.
func (s *server) handle(req *protocol.Command) *protocol.Command {
	switch req.Code {
	case protocol.ControllerRegisterBroker, protocol.BrokerHeartbeat, protocol.ControllerAlterSyncStateSet,
		protocol.ControllerGetReplicaInfo, protocol.ControllerElectMaster, protocol.ControllerGetMetadataInfo:
	default:
		return protocol.NewResponse(req, protocol.RequestCodeNotSupported,
			fmt.Sprintf("request code %d (%s) not supported by the Samsa controller", req.Code, protocol.RequestName(req.Code)))
	}
	if req.Ext(ExtDialect) != DialectJSON1 {
		return protocol.NewResponse(req, protocol.RequestCodeNotSupported,
			fmt.Sprintf("request code %d (%s): the Samsa controller speaks its own JSON bodies (header %s=%s) and is not wire-compatible with RocketMQ's Java brokers",
				req.Code, protocol.RequestName(req.Code), ExtDialect, DialectJSON1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ApplyTimeout)
	defer cancel()
	var (
		r         controller.Result
		replicas  map[int64]string
		positions map[int64]controller.Position
		err       error
	)
	switch req.Code {
	case protocol.ControllerGetMetadataInfo:
		return protocol.NewBodyResponse(req, s.n.Metadata())
	case protocol.ControllerRegisterBroker:
		var c controller.RegisterBroker
		if err := strictJSON(req.Body, &c); err != nil {
			return badBody(req, err)
		}
		r, err = s.n.Register(ctx, c)
	case protocol.BrokerHeartbeat:
		var c controller.Heartbeat
		if err := strictJSON(req.Body, &c); err != nil {
			return badBody(req, err)
		}
		r, err = s.n.Heartbeat(ctx, c)
	case protocol.ControllerAlterSyncStateSet:
		var c controller.AlterSyncStateSet
		if err := strictJSON(req.Body, &c); err != nil {
			return badBody(req, err)
		}
		r, err = s.n.AlterSyncStateSet(ctx, c)
	case protocol.ControllerGetReplicaInfo:
		var g controller.Group
		if err := strictJSON(req.Body, &g); err != nil {
			return badBody(req, err)
		}
		r, replicas, err = s.n.Show(ctx, g)
		if err == nil {
			positions = s.n.Positions(g)
		}
	case protocol.ControllerElectMaster:
		var e ElectRequest
		if err := strictJSON(req.Body, &e); err != nil {
			return badBody(req, err)
		}
		r, err = s.n.Elect(ctx, e.Group, e.Unclean)
	}
	return s.answer(req, Reply{Result: r, Replicas: replicas, Positions: positions}, err)
}

func badBody(req *protocol.Command, err error) *protocol.Command {
	return protocol.NewResponse(req, protocol.ControllerInvalidRequest, fmt.Sprintf("bad request body: %v", err))
}

// answer carries the Result in every answer, a refusal included (a
// fenced broker needs the master to follow), with the error's code and
// text; CONTROLLER_NOT_LEADER also names the leader in the header.
func (s *server) answer(req *protocol.Command, rep Reply, err error) *protocol.Command {
	body, merr := protocol.MarshalBody(rep)
	if merr != nil {
		return protocol.NewResponse(req, protocol.SystemError, merr.Error())
	}
	remark := ""
	if err != nil {
		remark = err.Error()
	}
	resp := protocol.NewResponse(req, codeOf(err), remark)
	resp.Body = body
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		resp.ExtFields = map[string]string{ExtLeaderID: nl.LeaderID, ExtLeaderAddr: nl.LeaderAddr}
	}
	return resp
}
