package broker

import "github.com/samsamq/samsa/protocol"

// requestHandlers is the request-code table. A code missing here gets
// REQUEST_CODE_NOT_SUPPORTED; in particular nothing here changes the
// broker's configuration (no UPDATE_BROKER_CONFIG): paths, hosts and
// commands are fixed at start.
func (b *Broker) requestHandlers() map[int32]requestHandler {
	off := b.offReq
	return map[int32]requestHandler{
		protocol.SendMessage:                      b.handleSend,
		protocol.SendMessageV2:                    b.handleSend,
		protocol.SendBatchMessage:                 b.handleSendBatch,
		protocol.PullMessage:                      b.handlePull,
		protocol.QueryConsumerOffset:              off.handleQueryConsumerOffset,
		protocol.UpdateConsumerOffset:             off.handleUpdateConsumerOffset,
		protocol.GetMaxOffset:                     off.handleGetMaxOffset,
		protocol.GetMinOffset:                     off.handleGetMinOffset,
		protocol.SearchOffsetByTimestamp:          off.handleSearchOffset,
		protocol.GetEarliestMsgStoretime:          off.handleEarliestMsgStoreTime,
		protocol.HeartBeat:                        b.clientReq.handleHeartbeat,
		protocol.CheckClientConfig:                b.handleCheckClientConfig,
		protocol.UnregisterClient:                 b.clientReq.handleUnregisterClient,
		protocol.GetConsumerListByGroup:           b.clientReq.handleGetConsumerList,
		protocol.UpdateAndCreateTopic:             b.handleUpdateAndCreateTopic,
		protocol.UpdateAndCreateTopicList:         b.handleUpdateAndCreateTopicList,
		protocol.GetAllTopicConfig:                b.handleGetAllTopicConfig,
		protocol.GetTopicConfig:                   b.handleGetTopicConfig,
		protocol.DeleteTopicInBroker:              b.handleDeleteTopic,
		protocol.LockBatchMQ:                      b.clientReq.handleLockBatch,
		protocol.UnlockBatchMQ:                    b.clientReq.handleUnlockBatch,
		protocol.ConsumerSendMsgBack:              b.handleSendBack,
		protocol.ViewMessageByID:                  b.handleViewMessage,
		protocol.QueryMessage:                     b.handleQueryMessage,
		protocol.GetAllConsumerOffset:             off.handleGetAllConsumerOffset,
		protocol.UpdateAndCreateSubscriptionGroup: b.handleUpdateAndCreateGroup,
		protocol.GetAllSubscriptionGroupConfig:    b.handleGetAllGroups,
		protocol.DeleteSubscriptionGroup:          b.handleDeleteGroup,
		protocol.EndTransaction:                   b.handleEndTransaction,
		protocol.GetAllDelayOffset:                b.handleGetAllDelayOffset,
		protocol.GetTimerCheckPoint:               b.handleGetTimerCheckPoint,
		protocol.GetTopicStatsInfo:                b.mqadmin.handleGetTopicStatsInfo,         // mqadmin_topic_stats.go
		protocol.GetConsumerConnectionList:        b.mqadmin.handleGetConsumerConnectionList, // mqadmin_consumer_conn.go
		protocol.GetBrokerConfig:                  b.mqadmin.handleGetBrokerConfig,           // mqadmin_config.go
		protocol.GetBrokerRuntimeInfo:             b.mqadmin.handleGetBrokerRuntimeInfo,      // mqadmin_runtime.go
		protocol.InvokeBrokerToResetOffset:        b.mqadmin.handleInvokeBrokerToResetOffset, // mqadmin_reset_offset.go
		protocol.GetConsumeStats:                  b.mqadmin.handleGetConsumeStats,           // mqadmin_consume_stats.go
		protocol.GetCommitLogRange:                b.handleGetCommitLogRange,                 // handle_log_range.go
		protocol.XAStart:                          b.handleXA,                                // handle_xa.go
		protocol.XAEnd:                            b.handleXA,
		protocol.XAPrepare:                        b.handleXA,
		protocol.XACommit:                         b.handleXA,
		protocol.XARollback:                       b.handleXA,
		protocol.XARecover:                        b.handleXA,
		protocol.XAForget:                         b.handleXA,
		protocol.PopMessage:                       b.handlePop, // handle_pop.go, package pop
		protocol.AckMessage:                       b.handleAck,
		protocol.ChangeMessageInvisibleTime:       b.handleChangeInvisibleTime,
		protocol.BatchAckMessage:                  b.handleBatchAck,
		protocol.PeekMessage:                      b.handlePeek, // handle_pop_info.go
		protocol.Notification:                     b.handleNotification,
		protocol.PollingInfo:                      b.handlePollingInfo,
		protocol.PopRollback:                      b.handlePopNotSupported,
	}
}
