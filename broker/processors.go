package broker

import "github.com/samsamq/samsa/protocol"

// processors is the request-code table. A code missing here gets
// REQUEST_CODE_NOT_SUPPORTED; in particular nothing here changes the
// broker's configuration (no UPDATE_BROKER_CONFIG): paths, hosts and
// commands are fixed at start.
func (b *Broker) processors() map[int16]processor {
	return map[int16]processor{
		protocol.SendMessage:                      b.processSend,
		protocol.SendMessageV2:                    b.processSend,
		protocol.SendBatchMessage:                 b.processSendBatch,
		protocol.PullMessage:                      b.processPull,
		protocol.QueryConsumerOffset:              b.processQueryConsumerOffset,
		protocol.UpdateConsumerOffset:             b.processUpdateConsumerOffset,
		protocol.GetMaxOffset:                     b.processGetMaxOffset,
		protocol.GetMinOffset:                     b.processGetMinOffset,
		protocol.SearchOffsetByTimestamp:          b.processSearchOffset,
		protocol.GetEarliestMsgStoretime:          b.processEarliestMsgStoreTime,
		protocol.HeartBeat:                        b.processHeartbeat,
		protocol.CheckClientConfig:                b.processCheckClientConfig,
		protocol.UnregisterClient:                 b.processUnregisterClient,
		protocol.GetConsumerListByGroup:           b.processGetConsumerList,
		protocol.UpdateAndCreateTopic:             b.processUpdateAndCreateTopic,
		protocol.GetAllTopicConfig:                b.processGetAllTopicConfig,
		protocol.DeleteTopicInBroker:              b.processDeleteTopic,
		protocol.LockBatchMQ:                      b.processLockBatch,
		protocol.UnlockBatchMQ:                    b.processUnlockBatch,
		protocol.ConsumerSendMsgBack:              b.processSendBack,
		protocol.ViewMessageByID:                  b.processViewMessage,
		protocol.QueryMessage:                     b.processQueryMessage,
		protocol.GetAllConsumerOffset:             b.processGetAllConsumerOffset,
		protocol.UpdateAndCreateSubscriptionGroup: b.processUpdateAndCreateGroup,
		protocol.GetAllSubscriptionGroupConfig:    b.processGetAllGroups,
		protocol.DeleteSubscriptionGroup:          b.processDeleteGroup,
		protocol.EndTransaction:                   b.processEndTransaction,
		protocol.GetAllDelayOffset:                b.processGetAllDelayOffset,
		protocol.GetTimerCheckPoint:               b.processGetTimerCheckPoint,
		protocol.GetTopicStatsInfo:                b.processGetTopicStatsInfo,         // admin_topic_stats.go
		protocol.GetConsumerConnectionList:        b.processGetConsumerConnectionList, // admin_consumer_conn.go
		protocol.GetBrokerConfig:                  b.processGetBrokerConfig,           // admin_config.go
		protocol.GetBrokerRuntimeInfo:             b.processGetBrokerRuntimeInfo,      // admin_runtime.go
		protocol.InvokeBrokerToResetOffset:        b.processInvokeBrokerToResetOffset, // admin_reset_offset.go
		protocol.GetConsumeStats:                  b.processGetConsumeStats,           // admin_consume_stats.go
		protocol.GetCommitLogRange:                b.processGetCommitLogRange,         // proc_log_range.go
	}
}
