package client

import (
	"context"
	"fmt"

	"github.com/samsamq/samsa/protocol"
)

// checkSQL92 asks every master broker of s's topic whether it takes s's
// selector (CHECK_CLIENT_CONFIG, as RocketMQ's Java client does before it
// starts a consumer with an SQL92 subscription): a broker without
// enablePropertyFilter, or one that cannot compile the selector, would
// refuse every pull, so Start fails instead.
func (c *PushConsumer) checkSQL92(ctx context.Context, s *subscription, r *topicRoute) error {
	body, err := protocol.MarshalBody(protocol.CheckClientRequestBody{ClientID: c.in.clientID, Group: c.opts.Group,
		SubscriptionData: &protocol.SubscriptionData{Topic: s.topic, SubString: s.expr, ExpressionType: protocol.ExpressionSQL92}})
	if err != nil {
		return err
	}
	for name := range r.brokers {
		addr := r.masterAddr(name)
		if addr == "" {
			continue
		}
		cctx, cancel := c.in.ctxTimeout(ctx)
		_, err := c.in.invoke(cctx, addr, protocol.NewRequest(protocol.CheckClientConfig, nil, body))
		cancel()
		if err != nil {
			return fmt.Errorf("client: broker %s does not take the SQL92 selector %q of %s: %w", name, s.expr, s.topic, err)
		}
	}
	return nil
}
