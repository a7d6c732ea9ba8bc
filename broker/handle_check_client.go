package broker

import (
	"github.com/samsamq/samsa/protocol"
)

// handleCheckClientConfig answers CHECK_CLIENT_CONFIG (46), which the
// Java client sends before it starts a consumer with a non-TAG
// subscription (the Go client's check is empty), as RocketMQ's
// ClientManageProcessor.checkClientConfig: SUCCESS for a TAG
// subscription or none; SYSTEM_ERROR when enablePropertyFilter is off;
// SUBSCRIPTION_PARSE_FAILED with the compiler's message for an
// expression that does not compile.
func (b *Broker) handleCheckClientConfig(_ *conn, req *protocol.Command) *protocol.Command {
	var body protocol.CheckClientRequestBody
	if len(req.Body) > 0 {
		if err := protocol.UnmarshalBody(req.Body, &body); err != nil {
			return protocol.NewResponse(req, protocol.SystemError, "bad check client body: "+err.Error())
		}
	}
	sd := body.SubscriptionData
	if sd == nil || sd.ExpressionType == "" || sd.ExpressionType == ExpTag {
		return protocol.NewResponse(req, protocol.Success, "")
	}
	if !b.cfg.EnablePropertyFilter {
		return protocol.NewResponse(req, protocol.SystemError, "The broker does not support consumer to filter message by "+sd.ExpressionType)
	}
	if !isSQL92(sd.ExpressionType) {
		return protocol.NewResponse(req, protocol.SubscriptionParseFailed, "unknown expression type "+sd.ExpressionType)
	}
	if _, err := sqlCache.compile(sd.SubString); err != nil {
		return protocol.NewResponse(req, protocol.SubscriptionParseFailed, err.Error())
	}
	return protocol.NewResponse(req, protocol.Success, "")
}
