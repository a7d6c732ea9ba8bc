package broker

import (
	"errors"

	"github.com/samsamq/samsa/protocol"
)

// A slave stores only what its master ships it. It refuses every send
// before looking at the topic (so it never auto-creates one), refuses
// topic and subscription group changes, and takes its topics, offsets and
// groups from its master (slave_sync.go). It serves pulls, long polls and
// offset queries from its own store and tables, and accepts offset
// commits (a consumer whose master is gone commits to the slave; the sync
// hands those commits to the master when it is back).

// slaveMetadataRemark is RocketMQ's answer to a topic or group change on a
// slave (AdminBrokerProcessor.validateSlave, SYSTEM_ERROR).
const slaveMetadataRemark = "Can't modify topic or subscription group from slave broker, please execute it from master broker."

// errSlaveMetadata: a slave's topics and groups change only by its
// master's copy.
var errSlaveMetadata = errors.New(slaveMetadataRemark)

// slaveSendRemark is RocketMQ 4.x's remark for SERVICE_NOT_AVAILABLE, the
// answer its store gives a message put to a slave
// (DefaultMessageStore.checkStoreStatus, SendMessageProcessor); RocketMQ
// adds the disk usage, which says nothing here.
const slaveSendRemark = "service not available now. It may be caused by one of the following reasons: " +
	"the broker's disk is full, messages are put to the slave, message store has been shut down, etc. " +
	"(this broker is a SLAVE: send to its master)"

// isSlave reports whether the broker is a slave: by brokerRole, or in
// controller mode whenever it may not take writes (controller_mode.go).
func (r *Replication) isSlave() bool {
	return r.cfg.BrokerRole == Slave || r.ctl != nil && !r.ctl.canWrite()
}

// refuseSendOnSlave is a slave's answer to SEND_MESSAGE, SEND_MESSAGE_V2
// and SEND_BATCH_MESSAGE; nil on a master.
func (r *Replication) refuseSendOnSlave(req *protocol.Command) *protocol.Command {
	if !r.isSlave() {
		return nil
	}
	r.slaveRefused.Add(1)
	return protocol.NewResponse(req, protocol.ServiceNotAvailable, slaveSendRemark)
}

// refuseSendBackOnSlave is a slave's answer to CONSUMER_SEND_MSG_BACK:
// RocketMQ 4.x answers a failed put there with SYSTEM_ERROR and the put
// status's name; the client then sends the retry message to the master
// itself.
func (r *Replication) refuseSendBackOnSlave(req *protocol.Command) *protocol.Command {
	if !r.isSlave() {
		return nil
	}
	r.slaveRefused.Add(1)
	return protocol.NewResponse(req, protocol.SystemError, "SERVICE_NOT_AVAILABLE: messages are put to the slave (send back to the master)")
}

// refuseMetadataOnSlave is a slave's answer to a topic or subscription
// group change; nil on a master.
func (r *Replication) refuseMetadataOnSlave(req *protocol.Command) *protocol.Command {
	if !r.isSlave() {
		return nil
	}
	return protocol.NewResponse(req, protocol.SystemError, slaveMetadataRemark)
}
