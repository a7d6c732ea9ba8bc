package raftctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/protocol"
)

// The wire: RocketMQ remoting frames (package protocol) with RocketMQ 5's
// request codes and our own JSON bodies (see the package doc).

// ExtDialect is the header field every Samsa controller request carries
// (value DialectJSON1). A request without it is a Java broker's, whose
// bodies we do not speak: it gets REQUEST_CODE_NOT_SUPPORTED.
const (
	ExtDialect   = "samsaController"
	DialectJSON1 = "json1"
)

// Header fields of a CONTROLLER_NOT_LEADER answer (RocketMQ's names).
const (
	ExtLeaderID   = "controllerLeaderId"
	ExtLeaderAddr = "controllerLeaderAddress"
)

// Request bodies: RegisterBroker, Heartbeat and AlterSyncStateSet are the
// controller command structs as JSON; GetReplicaInfo and ElectMaster (admin)
// take a controller.Group.

// Reply is the body of every answer to a command, success or refusal.
type Reply struct {
	Result controller.Result `json:"result"`
	// Replicas (GetReplicaInfo only): the group's replicas, id → address.
	Replicas map[int64]string `json:"replicas,omitempty"`
	// Positions (GetReplicaInfo only): where each replica last reported
	// its log stood, as the leader heard it.
	Positions map[int64]controller.Position `json:"positions,omitempty"`
}

// ElectRequest is the body of CONTROLLER_ELECT_MASTER: the group, and
// whether the operator chooses an unclean election (the most up-to-date
// alive replica even when it lacks acknowledged messages).
type ElectRequest struct {
	controller.Group
	Unclean bool `json:",omitempty"`
}

// Metadata is the body of an answer to CONTROLLER_GET_METADATA_INFO.
type Metadata struct {
	ID         string `json:"id"`
	IsLeader   bool   `json:"isLeader"`
	LeaderID   string `json:"leaderId"`
	LeaderAddr string `json:"leaderAddr"`
	Peers      []Peer `json:"peers"`
}

// codeOf maps an error of a command to its RocketMQ response code.
func codeOf(err error) int32 {
	switch {
	case err == nil:
		return protocol.Success
	case errors.Is(err, ErrNotLeader):
		return protocol.ControllerNotLeader
	case errors.Is(err, controller.ErrFenced):
		return protocol.ControllerFencedMasterEpoch
	case errors.Is(err, controller.ErrStaleSyncEpoch):
		return protocol.ControllerFencedSyncStateSetEpoch
	case errors.Is(err, controller.ErrNotMaster):
		return protocol.ControllerInvalidMaster
	case errors.Is(err, controller.ErrUnknownGroup), errors.Is(err, controller.ErrUnknownBroker):
		return protocol.ControllerBrokerNeedToBeRegistered
	case errors.Is(err, controller.ErrStaleElection):
		return protocol.ControllerElectMasterFailed
	case errors.Is(err, controller.ErrBadCommand):
		return protocol.ControllerInvalidRequest
	}
	return protocol.SystemError
}

// ErrorOf is the inverse of codeOf, for the client: the error a response
// code stands for, wrapping the controller's Err value so errors.Is works
// across the wire. Nil for SUCCESS.
func ErrorOf(code int32, remark string) error {
	var base error
	switch code {
	case protocol.Success:
		return nil
	case protocol.ControllerNotLeader:
		base = ErrNotLeader
	case protocol.ControllerFencedMasterEpoch:
		base = controller.ErrFenced
	case protocol.ControllerFencedSyncStateSetEpoch:
		base = controller.ErrStaleSyncEpoch
	case protocol.ControllerInvalidMaster:
		base = controller.ErrNotMaster
	case protocol.ControllerBrokerNeedToBeRegistered:
		base = controller.ErrUnknownBroker
	case protocol.ControllerElectMasterFailed:
		base = controller.ErrStaleElection
	case protocol.ControllerInvalidRequest:
		base = controller.ErrBadCommand
	}
	return &RemoteError{Code: code, Remark: remark, base: base}
}

// RemoteError is a refusal from the controller server (Code is the
// response code). errors.Is matches the controller's Err value it stands
// for, if any (ErrUnknownGroup answers as
// ErrUnknownBroker: both mean "register first").
type RemoteError struct {
	Code   int32
	Remark string
	base   error
}

func (e *RemoteError) Error() string {
	if e.base == nil {
		return fmt.Sprintf("raftctl: controller answered code %d (%s): %s", e.Code, protocol.ResponseName(e.Code), e.Remark)
	}
	return e.Remark
}
func (e *RemoteError) Unwrap() error { return e.base }

// Is makes a "register first" answer match ErrUnknownGroup as well.
func (e *RemoteError) Is(target error) bool {
	return target == controller.ErrUnknownGroup && e.Code == protocol.ControllerBrokerNeedToBeRegistered
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON body")
	}
	return nil
}
