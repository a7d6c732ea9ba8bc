package broker

import "github.com/samsamq/samsa/protocol"

// requestHandlers is the request-code table. A code missing here gets
// REQUEST_CODE_NOT_SUPPORTED; in particular nothing here changes the
// broker's configuration (no UPDATE_BROKER_CONFIG): paths, hosts and
// commands are fixed at start.
func (b *Broker) requestHandlers() map[int16]requestHandler {
	return map[int16]requestHandler{
		protocol.SendMessage:                      b.handleSend,
		protocol.SendMessageV2:                    b.handleSend,
		protocol.SendBatchMessage:                 b.handleSendBatch,
		protocol.PullMessage:                      b.handlePull,
		protocol.QueryConsumerOffset:              b.handleQueryConsumerOffset,
		protocol.UpdateConsumerOffset:             b.handleUpdateConsumerOffset,
		protocol.GetMaxOffset:                     b.handleGetMaxOffset,
		protocol.GetMinOffset:                     b.handleGetMinOffset,
		protocol.SearchOffsetByTimestamp:          b.handleSearchOffset,
		protocol.GetEarliestMsgStoretime:          b.handleEarliestMsgStoreTime,
		protocol.HeartBeat:                        b.handleHeartbeat,
		protocol.CheckClientConfig:                b.handleCheckClientConfig,
		protocol.UnregisterClient:                 b.handleUnregisterClient,
		protocol.GetConsumerListByGroup:           b.handleGetConsumerList,
		protocol.UpdateAndCreateTopic:             b.handleUpdateAndCreateTopic,
		protocol.GetAllTopicConfig:                b.handleGetAllTopicConfig,
		protocol.DeleteTopicInBroker:              b.handleDeleteTopic,
		protocol.LockBatchMQ:                      b.handleLockBatch,
		protocol.UnlockBatchMQ:                    b.handleUnlockBatch,
		protocol.ConsumerSendMsgBack:              b.handleSendBack,
		protocol.ViewMessageByID:                  b.handleViewMessage,
		protocol.QueryMessage:                     b.handleQueryMessage,
		protocol.GetAllConsumerOffset:             b.handleGetAllConsumerOffset,
		protocol.UpdateAndCreateSubscriptionGroup: b.handleUpdateAndCreateGroup,
		protocol.GetAllSubscriptionGroupConfig:    b.handleGetAllGroups,
		protocol.DeleteSubscriptionGroup:          b.handleDeleteGroup,
		protocol.EndTransaction:                   b.handleEndTransaction,
		protocol.GetAllDelayOffset:                b.handleGetAllDelayOffset,
		protocol.GetTimerCheckPoint:               b.handleGetTimerCheckPoint,
		protocol.GetTopicStatsInfo:                b.handleGetTopicStatsInfo,         // mqadmin_topic_stats.go
		protocol.GetConsumerConnectionList:        b.handleGetConsumerConnectionList, // mqadmin_consumer_conn.go
		protocol.GetBrokerConfig:                  b.handleGetBrokerConfig,           // mqadmin_config.go
		protocol.GetBrokerRuntimeInfo:             b.handleGetBrokerRuntimeInfo,      // mqadmin_runtime.go
		protocol.InvokeBrokerToResetOffset:        b.handleInvokeBrokerToResetOffset, // mqadmin_reset_offset.go
		protocol.GetConsumeStats:                  b.handleGetConsumeStats,           // mqadmin_consume_stats.go
		protocol.GetCommitLogRange:                b.handleGetCommitLogRange,         // handle_log_range.go
	}
}
