package broker

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/samsamq/samsa/protocol"
)

// clientRequests answer what clients say of themselves: heartbeats (their
// groups and subscriptions), leaving, their group's members, and the
// queue locks of orderly consumers (RocketMQ's ClientManageProcessor and
// the lock half of AdminBrokerProcessor).
type clientRequests struct {
	cfg     *Config // read only
	log     *slog.Logger
	clients *clientManager
	groups  *groupManager
	topics  *topicManager
	locks   *lockManager
	// isSlave says this replica is not master now: it creates no retry
	// topics or groups (its master's come by the sync).
	isSlave func() bool
	// topicsChanged tells the name servers of a topic created here.
	topicsChanged func()
	ans           answers
}

// handleHeartbeat answers HEART_BEAT (34): it learns the client's
// producer and consumer groups and subscriptions, creates each consumer
// group's retry topic (%RETRY%group) and, with autoCreateSubscriptionGroup,
// its subscription group config (not on a slave: those come from the
// master), and notifies a group's members when its membership or
// subscriptions changed.
func (cr *clientRequests) handleHeartbeat(c *conn, req *protocol.Command) *protocol.Command {
	var hb protocol.HeartbeatData
	if err := protocol.UnmarshalBody(req.Body, &hb); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "bad heartbeat body: "+err.Error())
	}
	if err := checkHeartbeatNames(&hb); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "heartbeat refused: "+err.Error())
	}
	if req.ExtFields[protocol.ExtClientChecksCRC] == "true" {
		c.checksCRC.Store(true) // its pulls need no read-time check (conn_sendfile.go)
	}
	h := Heartbeat{ClientID: hb.ClientID, Language: req.Language, Version: int(req.Version)}
	for _, p := range hb.ProducerDataSet {
		if p.GroupName != "" {
			h.Producers = append(h.Producers, p.GroupName)
		}
	}
	topicsChanged := false
	for _, cd := range hb.ConsumerDataSet {
		if cd.GroupName == "" {
			continue
		}
		ch := ConsumerHeartbeat{Group: cd.GroupName, ConsumeType: cd.ConsumeType, MessageModel: cd.MessageModel,
			FromWhere: cd.ConsumeFromWhere}
		for _, sd := range cd.SubscriptionDataSet {
			s := Subscription{Topic: sd.Topic, SubString: sd.SubString, ExpType: sd.ExpressionType, SubVersion: sd.SubVersion}
			if s.ExpType == "" {
				s.ExpType = ExpTag
			}
			f, err := parseSubscription(s.ExpType, s.SubString)
			if err != nil && !errors.Is(err, ErrUnsupportedFilter) {
				return protocol.NewResponse(req, protocol.SubscriptionParseFailed, "parse subscription: "+err.Error())
			}
			s.Tags = f
			if isSQL92(s.ExpType) {
				if s.SQL, err = sqlCache.compile(s.SubString); err != nil {
					cr.log.Warn("broker: SQL92 subscription does not compile", "group", cd.GroupName, "topic", s.Topic, "err", err)
				}
			}
			ch.Subscriptions = append(ch.Subscriptions, s)
		}
		h.Consumers = append(h.Consumers, ch)
		if cr.isSlave() {
			continue // the master creates the retry topic and group; the sync copies them
		}
		if cr.cfg.AutoCreateSubscriptionGroup {
			if _, err := cr.groups.createIfMissing(cd.GroupName); err != nil {
				cr.log.Error("broker: create subscription group", "group", cd.GroupName, "err", err)
			}
		}
		retry := RetryGroupPrefix + cd.GroupName
		if ValidateTopic(retry) == nil {
			_, created, err := cr.topics.createIfMissing(retry, 1, PermRead|PermWrite)
			if err != nil {
				cr.log.Error("broker: create retry topic", "topic", retry, "err", err)
			}
			topicsChanged = topicsChanged || created
		}
	}
	if topicsChanged {
		cr.topicsChanged()
	}
	cr.clients.notify(cr.clients.heartbeat(c, h, cr.cfg.Clock()))
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleUnregisterClient answers UNREGISTER_CLIENT (35).
func (cr *clientRequests) handleUnregisterClient(c *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.UnregisterClientRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	cr.clients.notify(cr.clients.unregister(c, h.ProducerGroup, h.ConsumerGroup))
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleGetConsumerList answers GET_CONSUMER_LIST_BY_GROUP (38): the
// client ids of the group's live members.
func (cr *clientRequests) handleGetConsumerList(_ *conn, req *protocol.Command) *protocol.Command {
	h := &protocol.GetConsumerListByGroupRequestHeader{}
	if r := decodeHeader(req, h); r != nil {
		return r
	}
	ids := cr.clients.consumerIDs(h.ConsumerGroup)
	if len(ids) == 0 {
		return protocol.NewResponse(req, protocol.SystemError, "no consumer for this group, "+h.ConsumerGroup)
	}
	return cr.ans.body(req, protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: ids})
}

// handleLockBatch answers LOCK_BATCH_MQ (41): the orderly consumer asks
// to own queues; the answer lists those it now holds.
func (cr *clientRequests) handleLockBatch(_ *conn, req *protocol.Command) *protocol.Command {
	var body protocol.LockBatchRequestBody
	if err := protocol.UnmarshalBody(req.Body, &body); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "bad lock body: "+err.Error())
	}
	if err := ValidateGroup(body.ConsumerGroup); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "lock batch refused: "+err.Error())
	}
	if len(body.ClientID) > MaxClientIDLength {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("lock batch refused: client id of %d bytes (at most %d)", len(body.ClientID), MaxClientIDLength))
	}
	if len(body.MQSet) > MaxLockBatch {
		return protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("lock batch refused: %d queues in one request (at most %d)", len(body.MQSet), MaxLockBatch))
	}
	// Only queues this broker has are locked: the others are left out of
	// the answer (the client holds no lock on them), so the lock table
	// holds no names a client made up.
	keys := make([]QueueKey, 0, len(body.MQSet))
	for _, mq := range body.MQSet {
		if tc, ok := cr.topics.get(mq.Topic); ok && mq.QueueID >= 0 && int(mq.QueueID) < max(tc.ReadQueueNums, tc.WriteQueueNums) {
			keys = append(keys, QueueKey{mq.Topic, mq.QueueID})
		}
	}
	locked := cr.locks.tryLock(body.ConsumerGroup, body.ClientID, keys, cr.cfg.Clock())
	out := protocol.LockBatchResponseBody{LockOKMQSet: make([]protocol.MessageQueue, 0, len(locked))}
	for _, k := range locked {
		out.LockOKMQSet = append(out.LockOKMQSet, protocol.MessageQueue{Topic: k.Topic, BrokerName: cr.cfg.BrokerName, QueueID: k.QueueID})
	}
	return cr.ans.body(req, out)
}

// Bounds on what a client's requests put into the broker's tables (see
// answer_limits.go).
const (
	// MaxClientIDLength bounds a heartbeat's or lock request's client id
	// (RocketMQ's are ip@instance[@unit], well under it).
	MaxClientIDLength = 1 << 10
	// MaxLockBatch bounds the queues of one LOCK_BATCH_MQ: its answer
	// lists them again, and each is an entry of the lock table.
	MaxLockBatch = 1 << 14
)

// handleUnlockBatch answers UNLOCK_BATCH_MQ (42).
func (cr *clientRequests) handleUnlockBatch(_ *conn, req *protocol.Command) *protocol.Command {
	var body protocol.UnlockBatchRequestBody
	if err := protocol.UnmarshalBody(req.Body, &body); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "bad unlock body: "+err.Error())
	}
	keys := make([]QueueKey, len(body.MQSet))
	for i, mq := range body.MQSet {
		keys[i] = QueueKey{mq.Topic, mq.QueueID}
	}
	cr.locks.unlock(body.ConsumerGroup, body.ClientID, keys)
	return protocol.NewResponse(req, protocol.Success, "")
}

// checkHeartbeatNames checks a heartbeat's group names (ValidateGroup; an
// empty one is skipped, as before) and its subscriptions' topic names
// (ValidateTopic) before anything of it is recorded: a name RocketMQ's
// clients would refuse never reaches the subscription table or
// subscriptionGroup.json.
func checkHeartbeatNames(hb *protocol.HeartbeatData) error {
	if len(hb.ClientID) > MaxClientIDLength {
		return fmt.Errorf("client id of %d bytes (at most %d)", len(hb.ClientID), MaxClientIDLength)
	}
	for _, p := range hb.ProducerDataSet {
		if p.GroupName != "" {
			if err := ValidateGroup(p.GroupName); err != nil {
				return fmt.Errorf("producer group: %w", err)
			}
		}
	}
	for _, cd := range hb.ConsumerDataSet {
		if cd.GroupName == "" {
			continue
		}
		if err := ValidateGroup(cd.GroupName); err != nil {
			return fmt.Errorf("consumer group: %w", err)
		}
		for _, sd := range cd.SubscriptionDataSet {
			if err := ValidateTopic(sd.Topic); err != nil {
				return fmt.Errorf("consumer group %s subscribes to a bad topic: %w", cd.GroupName, err)
			}
		}
	}
	return nil
}
