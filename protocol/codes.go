// Code generated from RocketMQ's RequestCode, ResponseCode and RemotingSysResponseCode
// (apache/rocketmq remoting/protocol); spot-checked by codes_test.go. Regenerate rather
// than edit when RocketMQ adds a code. Codes are int32 as in RocketMQ (5.x POP codes pass int16;
// a binary header still carries int16, so they travel in JSON headers).

package protocol

import "strconv"

// RequestCode is a request code (RocketMQ RequestCode). It is an alias so the
// constants go straight into Command.Code.
type RequestCode = int32

// ResponseCode is a response code (RocketMQ ResponseCode / RemotingSysResponseCode).
type ResponseCode = int32

// Request codes, named after RocketMQ's RequestCode constants.
const (
	SendMessage                          RequestCode = 10   // SEND_MESSAGE
	PullMessage                          RequestCode = 11   // PULL_MESSAGE
	QueryMessage                         RequestCode = 12   // QUERY_MESSAGE
	QueryBrokerOffset                    RequestCode = 13   // QUERY_BROKER_OFFSET
	QueryConsumerOffset                  RequestCode = 14   // QUERY_CONSUMER_OFFSET
	UpdateConsumerOffset                 RequestCode = 15   // UPDATE_CONSUMER_OFFSET
	UpdateAndCreateTopic                 RequestCode = 17   // UPDATE_AND_CREATE_TOPIC
	UpdateAndCreateTopicList             RequestCode = 18   // UPDATE_AND_CREATE_TOPIC_LIST
	GetAllTopicConfig                    RequestCode = 21   // GET_ALL_TOPIC_CONFIG
	GetTopicConfigList                   RequestCode = 22   // GET_TOPIC_CONFIG_LIST
	GetTopicNameList                     RequestCode = 23   // GET_TOPIC_NAME_LIST
	UpdateBrokerConfig                   RequestCode = 25   // UPDATE_BROKER_CONFIG
	GetBrokerConfig                      RequestCode = 26   // GET_BROKER_CONFIG
	TriggerDeleteFiles                   RequestCode = 27   // TRIGGER_DELETE_FILES
	GetBrokerRuntimeInfo                 RequestCode = 28   // GET_BROKER_RUNTIME_INFO
	SearchOffsetByTimestamp              RequestCode = 29   // SEARCH_OFFSET_BY_TIMESTAMP
	GetMaxOffset                         RequestCode = 30   // GET_MAX_OFFSET
	GetMinOffset                         RequestCode = 31   // GET_MIN_OFFSET
	GetEarliestMsgStoretime              RequestCode = 32   // GET_EARLIEST_MSG_STORETIME
	ViewMessageByID                      RequestCode = 33   // VIEW_MESSAGE_BY_ID
	HeartBeat                            RequestCode = 34   // HEART_BEAT
	UnregisterClient                     RequestCode = 35   // UNREGISTER_CLIENT
	ConsumerSendMsgBack                  RequestCode = 36   // CONSUMER_SEND_MSG_BACK
	EndTransaction                       RequestCode = 37   // END_TRANSACTION
	GetConsumerListByGroup               RequestCode = 38   // GET_CONSUMER_LIST_BY_GROUP
	CheckTransactionState                RequestCode = 39   // CHECK_TRANSACTION_STATE
	NotifyConsumerIdsChanged             RequestCode = 40   // NOTIFY_CONSUMER_IDS_CHANGED
	LockBatchMQ                          RequestCode = 41   // LOCK_BATCH_MQ
	UnlockBatchMQ                        RequestCode = 42   // UNLOCK_BATCH_MQ
	GetAllConsumerOffset                 RequestCode = 43   // GET_ALL_CONSUMER_OFFSET
	GetAllDelayOffset                    RequestCode = 45   // GET_ALL_DELAY_OFFSET
	CheckClientConfig                    RequestCode = 46   // CHECK_CLIENT_CONFIG
	GetClientConfig                      RequestCode = 47   // GET_CLIENT_CONFIG
	GetTimerCheckPoint                   RequestCode = 60   // GET_TIMER_CHECK_POINT
	GetTimerMetrics                      RequestCode = 61   // GET_TIMER_METRICS
	PutKVConfig                          RequestCode = 100  // PUT_KV_CONFIG
	GetKVConfig                          RequestCode = 101  // GET_KV_CONFIG
	DeleteKVConfig                       RequestCode = 102  // DELETE_KV_CONFIG
	RegisterBroker                       RequestCode = 103  // REGISTER_BROKER
	UnregisterBroker                     RequestCode = 104  // UNREGISTER_BROKER
	GetRouteInfoByTopic                  RequestCode = 105  // GET_ROUTEINFO_BY_TOPIC
	GetBrokerClusterInfo                 RequestCode = 106  // GET_BROKER_CLUSTER_INFO
	UpdateAndCreateSubscriptionGroup     RequestCode = 200  // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
	GetAllSubscriptionGroupConfig        RequestCode = 201  // GET_ALL_SUBSCRIPTIONGROUP_CONFIG
	GetTopicStatsInfo                    RequestCode = 202  // GET_TOPIC_STATS_INFO
	GetConsumerConnectionList            RequestCode = 203  // GET_CONSUMER_CONNECTION_LIST
	GetProducerConnectionList            RequestCode = 204  // GET_PRODUCER_CONNECTION_LIST
	WipeWritePermOfBroker                RequestCode = 205  // WIPE_WRITE_PERM_OF_BROKER
	GetAllTopicListFromNameServer        RequestCode = 206  // GET_ALL_TOPIC_LIST_FROM_NAMESERVER
	DeleteSubscriptionGroup              RequestCode = 207  // DELETE_SUBSCRIPTIONGROUP
	GetConsumeStats                      RequestCode = 208  // GET_CONSUME_STATS
	SuspendConsumer                      RequestCode = 209  // SUSPEND_CONSUMER
	ResumeConsumer                       RequestCode = 210  // RESUME_CONSUMER
	ResetConsumerOffsetInConsumer        RequestCode = 211  // RESET_CONSUMER_OFFSET_IN_CONSUMER
	ResetConsumerOffsetInBroker          RequestCode = 212  // RESET_CONSUMER_OFFSET_IN_BROKER
	AdjustConsumerThreadPool             RequestCode = 213  // ADJUST_CONSUMER_THREAD_POOL
	WhoConsumeTheMessage                 RequestCode = 214  // WHO_CONSUME_THE_MESSAGE
	DeleteTopicInBroker                  RequestCode = 215  // DELETE_TOPIC_IN_BROKER
	DeleteTopicInNamesrv                 RequestCode = 216  // DELETE_TOPIC_IN_NAMESRV
	RegisterTopicInNamesrv               RequestCode = 217  // REGISTER_TOPIC_IN_NAMESRV
	GetKVListByNamespace                 RequestCode = 219  // GET_KVLIST_BY_NAMESPACE
	ResetConsumerClientOffset            RequestCode = 220  // RESET_CONSUMER_CLIENT_OFFSET
	GetConsumerStatusFromClient          RequestCode = 221  // GET_CONSUMER_STATUS_FROM_CLIENT
	InvokeBrokerToResetOffset            RequestCode = 222  // INVOKE_BROKER_TO_RESET_OFFSET
	InvokeBrokerToGetConsumerStatus      RequestCode = 223  // INVOKE_BROKER_TO_GET_CONSUMER_STATUS
	QueryTopicConsumeByWho               RequestCode = 300  // QUERY_TOPIC_CONSUME_BY_WHO
	GetTopicsByCluster                   RequestCode = 224  // GET_TOPICS_BY_CLUSTER
	UpdateAndCreateSubscriptionGroupList RequestCode = 225  // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
	QueryTopicsByConsumer                RequestCode = 343  // QUERY_TOPICS_BY_CONSUMER
	QuerySubscriptionByConsumer          RequestCode = 345  // QUERY_SUBSCRIPTION_BY_CONSUMER
	RegisterFilterServer                 RequestCode = 301  // REGISTER_FILTER_SERVER
	RegisterMessageFilterClass           RequestCode = 302  // REGISTER_MESSAGE_FILTER_CLASS
	QueryConsumeTimeSpan                 RequestCode = 303  // QUERY_CONSUME_TIME_SPAN
	GetSystemTopicListFromNS             RequestCode = 304  // GET_SYSTEM_TOPIC_LIST_FROM_NS
	GetSystemTopicListFromBroker         RequestCode = 305  // GET_SYSTEM_TOPIC_LIST_FROM_BROKER
	CleanExpiredConsumeQueue             RequestCode = 306  // CLEAN_EXPIRED_CONSUMEQUEUE
	GetConsumerRunningInfo               RequestCode = 307  // GET_CONSUMER_RUNNING_INFO
	QueryCorrectionOffset                RequestCode = 308  // QUERY_CORRECTION_OFFSET
	ConsumeMessageDirectly               RequestCode = 309  // CONSUME_MESSAGE_DIRECTLY
	SendMessageV2                        RequestCode = 310  // SEND_MESSAGE_V2
	GetUnitTopicList                     RequestCode = 311  // GET_UNIT_TOPIC_LIST
	GetHasUnitSubTopicList               RequestCode = 312  // GET_HAS_UNIT_SUB_TOPIC_LIST
	GetHasUnitSubUnUnitTopicList         RequestCode = 313  // GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST
	CloneGroupOffset                     RequestCode = 314  // CLONE_GROUP_OFFSET
	ViewBrokerStatsData                  RequestCode = 315  // VIEW_BROKER_STATS_DATA
	CleanUnusedTopic                     RequestCode = 316  // CLEAN_UNUSED_TOPIC
	GetBrokerConsumeStats                RequestCode = 317  // GET_BROKER_CONSUME_STATS
	UpdateNamesrvConfig                  RequestCode = 318  // UPDATE_NAMESRV_CONFIG
	GetNamesrvConfig                     RequestCode = 319  // GET_NAMESRV_CONFIG
	SendBatchMessage                     RequestCode = 320  // SEND_BATCH_MESSAGE
	QueryConsumeQueue                    RequestCode = 321  // QUERY_CONSUME_QUEUE
	QueryDataVersion                     RequestCode = 322  // QUERY_DATA_VERSION
	ResumeCheckHalfMessage               RequestCode = 323  // RESUME_CHECK_HALF_MESSAGE
	SendReplyMessage                     RequestCode = 324  // SEND_REPLY_MESSAGE
	SendReplyMessageV2                   RequestCode = 325  // SEND_REPLY_MESSAGE_V2
	PushReplyMessageToClient             RequestCode = 326  // PUSH_REPLY_MESSAGE_TO_CLIENT
	AddWritePermOfBroker                 RequestCode = 327  // ADD_WRITE_PERM_OF_BROKER
	GetAllProducerInfo                   RequestCode = 328  // GET_ALL_PRODUCER_INFO
	DeleteExpiredCommitLog               RequestCode = 329  // DELETE_EXPIRED_COMMITLOG
	GetTopicConfig                       RequestCode = 351  // GET_TOPIC_CONFIG
	GetSubscriptionGroupConfig           RequestCode = 352  // GET_SUBSCRIPTIONGROUP_CONFIG
	UpdateAndGetGroupForbidden           RequestCode = 353  // UPDATE_AND_GET_GROUP_FORBIDDEN
	CheckRocksDBCQWriteProgress          RequestCode = 354  // CHECK_ROCKSDB_CQ_WRITE_PROGRESS
	ExportRocksDBConfigToJSON            RequestCode = 355  // EXPORT_ROCKSDB_CONFIG_TO_JSON
	LitePullMessage                      RequestCode = 361  // LITE_PULL_MESSAGE
	RecallMessage                        RequestCode = 370  // RECALL_MESSAGE
	QueryAssignment                      RequestCode = 400  // QUERY_ASSIGNMENT
	SetMessageRequestMode                RequestCode = 401  // SET_MESSAGE_REQUEST_MODE
	GetAllMessageRequestMode             RequestCode = 402  // GET_ALL_MESSAGE_REQUEST_MODE
	UpdateAndCreateStaticTopic           RequestCode = 513  // UPDATE_AND_CREATE_STATIC_TOPIC
	GetBrokerMemberGroup                 RequestCode = 901  // GET_BROKER_MEMBER_GROUP
	AddBroker                            RequestCode = 902  // ADD_BROKER
	RemoveBroker                         RequestCode = 903  // REMOVE_BROKER
	BrokerHeartbeat                      RequestCode = 904  // BROKER_HEARTBEAT
	NotifyMinBrokerIDChange              RequestCode = 905  // NOTIFY_MIN_BROKER_ID_CHANGE
	ExchangeBrokerHAInfo                 RequestCode = 906  // EXCHANGE_BROKER_HA_INFO
	GetBrokerHAStatus                    RequestCode = 907  // GET_BROKER_HA_STATUS
	ResetMasterFlushOffset               RequestCode = 908  // RESET_MASTER_FLUSH_OFFSET
	ControllerAlterSyncStateSet          RequestCode = 1001 // CONTROLLER_ALTER_SYNC_STATE_SET
	ControllerElectMaster                RequestCode = 1002 // CONTROLLER_ELECT_MASTER
	ControllerRegisterBroker             RequestCode = 1003 // CONTROLLER_REGISTER_BROKER
	ControllerGetReplicaInfo             RequestCode = 1004 // CONTROLLER_GET_REPLICA_INFO
	ControllerGetMetadataInfo            RequestCode = 1005 // CONTROLLER_GET_METADATA_INFO
	ControllerGetSyncStateData           RequestCode = 1006 // CONTROLLER_GET_SYNC_STATE_DATA
	GetBrokerEpochCache                  RequestCode = 1007 // GET_BROKER_EPOCH_CACHE
	NotifyBrokerRoleChanged              RequestCode = 1008 // NOTIFY_BROKER_ROLE_CHANGED
	UpdateControllerConfig               RequestCode = 1009 // UPDATE_CONTROLLER_CONFIG
	GetControllerConfig                  RequestCode = 1010 // GET_CONTROLLER_CONFIG
	CleanBrokerData                      RequestCode = 1011 // CLEAN_BROKER_DATA
	ControllerGetNextBrokerID            RequestCode = 1012 // CONTROLLER_GET_NEXT_BROKER_ID
	ControllerApplyBrokerID              RequestCode = 1013 // CONTROLLER_APPLY_BROKER_ID
	UpdateColdDataFlowCtrConfig          RequestCode = 2001 // UPDATE_COLD_DATA_FLOW_CTR_CONFIG
	RemoveColdDataFlowCtrConfig          RequestCode = 2002 // REMOVE_COLD_DATA_FLOW_CTR_CONFIG
	GetColdDataFlowCtrInfo               RequestCode = 2003 // GET_COLD_DATA_FLOW_CTR_INFO
	SetCommitLogReadMode                 RequestCode = 2004 // SET_COMMITLOG_READ_MODE
	AuthCreateUser                       RequestCode = 3001 // AUTH_CREATE_USER
	AuthUpdateUser                       RequestCode = 3002 // AUTH_UPDATE_USER
	AuthDeleteUser                       RequestCode = 3003 // AUTH_DELETE_USER
	AuthGetUser                          RequestCode = 3004 // AUTH_GET_USER
	AuthListUser                         RequestCode = 3005 // AUTH_LIST_USER
	AuthCreateACL                        RequestCode = 3006 // AUTH_CREATE_ACL
	AuthUpdateACL                        RequestCode = 3007 // AUTH_UPDATE_ACL
	AuthDeleteACL                        RequestCode = 3008 // AUTH_DELETE_ACL
	AuthGetACL                           RequestCode = 3009 // AUTH_GET_ACL
	AuthListACL                          RequestCode = 3010 // AUTH_LIST_ACL
)

// Response codes, named after RocketMQ's ResponseCode constants.
const (
	Success                              ResponseCode = 0    // SUCCESS
	SystemError                          ResponseCode = 1    // SYSTEM_ERROR
	SystemBusy                           ResponseCode = 2    // SYSTEM_BUSY
	RequestCodeNotSupported              ResponseCode = 3    // REQUEST_CODE_NOT_SUPPORTED
	TransactionFailed                    ResponseCode = 4    // TRANSACTION_FAILED
	FlushDiskTimeout                     ResponseCode = 10   // FLUSH_DISK_TIMEOUT
	SlaveNotAvailable                    ResponseCode = 11   // SLAVE_NOT_AVAILABLE
	FlushSlaveTimeout                    ResponseCode = 12   // FLUSH_SLAVE_TIMEOUT
	MessageIllegal                       ResponseCode = 13   // MESSAGE_ILLEGAL
	ServiceNotAvailable                  ResponseCode = 14   // SERVICE_NOT_AVAILABLE
	VersionNotSupported                  ResponseCode = 15   // VERSION_NOT_SUPPORTED
	NoPermission                         ResponseCode = 16   // NO_PERMISSION
	TopicNotExist                        ResponseCode = 17   // TOPIC_NOT_EXIST
	TopicExistAlready                    ResponseCode = 18   // TOPIC_EXIST_ALREADY
	PullNotFound                         ResponseCode = 19   // PULL_NOT_FOUND
	PullRetryImmediately                 ResponseCode = 20   // PULL_RETRY_IMMEDIATELY
	PullOffsetMoved                      ResponseCode = 21   // PULL_OFFSET_MOVED
	QueryNotFound                        ResponseCode = 22   // QUERY_NOT_FOUND
	SubscriptionParseFailed              ResponseCode = 23   // SUBSCRIPTION_PARSE_FAILED
	SubscriptionNotExist                 ResponseCode = 24   // SUBSCRIPTION_NOT_EXIST
	SubscriptionNotLatest                ResponseCode = 25   // SUBSCRIPTION_NOT_LATEST
	SubscriptionGroupNotExist            ResponseCode = 26   // SUBSCRIPTION_GROUP_NOT_EXIST
	FilterDataNotExist                   ResponseCode = 27   // FILTER_DATA_NOT_EXIST
	FilterDataNotLatest                  ResponseCode = 28   // FILTER_DATA_NOT_LATEST
	InvalidParameter                     ResponseCode = 29   // INVALID_PARAMETER
	TransactionShouldCommit              ResponseCode = 200  // TRANSACTION_SHOULD_COMMIT
	TransactionShouldRollback            ResponseCode = 201  // TRANSACTION_SHOULD_ROLLBACK
	TransactionStateUnknow               ResponseCode = 202  // TRANSACTION_STATE_UNKNOW
	TransactionStateGroupWrong           ResponseCode = 203  // TRANSACTION_STATE_GROUP_WRONG
	NoBuyerID                            ResponseCode = 204  // NO_BUYER_ID
	NotInCurrentUnit                     ResponseCode = 205  // NOT_IN_CURRENT_UNIT
	ConsumerNotOnline                    ResponseCode = 206  // CONSUMER_NOT_ONLINE
	ConsumeMsgTimeout                    ResponseCode = 207  // CONSUME_MSG_TIMEOUT
	NoMessage                            ResponseCode = 208  // NO_MESSAGE
	PollingFull                          ResponseCode = 209  // POLLING_FULL
	PollingTimeout                       ResponseCode = 210  // POLLING_TIMEOUT
	BrokerNotExist                       ResponseCode = 211  // BROKER_NOT_EXIST
	BrokerDispatchNotComplete            ResponseCode = 212  // BROKER_DISPATCH_NOT_COMPLETE
	BroadcastConsumption                 ResponseCode = 213  // BROADCAST_CONSUMPTION
	FlowControl                          ResponseCode = 215  // FLOW_CONTROL
	NotLeaderForQueue                    ResponseCode = 501  // NOT_LEADER_FOR_QUEUE
	IllegalOperation                     ResponseCode = 604  // ILLEGAL_OPERATION
	GoAway                               ResponseCode = 1500 // GO_AWAY
	ControllerFencedMasterEpoch          ResponseCode = 2000 // CONTROLLER_FENCED_MASTER_EPOCH
	ControllerFencedSyncStateSetEpoch    ResponseCode = 2001 // CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
	ControllerInvalidMaster              ResponseCode = 2002 // CONTROLLER_INVALID_MASTER
	ControllerInvalidReplicas            ResponseCode = 2003 // CONTROLLER_INVALID_REPLICAS
	ControllerMasterNotAvailable         ResponseCode = 2004 // CONTROLLER_MASTER_NOT_AVAILABLE
	ControllerInvalidRequest             ResponseCode = 2005 // CONTROLLER_INVALID_REQUEST
	ControllerBrokerNotAlive             ResponseCode = 2006 // CONTROLLER_BROKER_NOT_ALIVE
	ControllerNotLeader                  ResponseCode = 2007 // CONTROLLER_NOT_LEADER
	ControllerBrokerMetadataNotExist     ResponseCode = 2008 // CONTROLLER_BROKER_METADATA_NOT_EXIST
	ControllerInvalidCleanBrokerMetadata ResponseCode = 2009 // CONTROLLER_INVALID_CLEAN_BROKER_METADATA
	ControllerBrokerNeedToBeRegistered   ResponseCode = 2010 // CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
	ControllerMasterStillExist           ResponseCode = 2011 // CONTROLLER_MASTER_STILL_EXIST
	ControllerElectMasterFailed          ResponseCode = 2012 // CONTROLLER_ELECT_MASTER_FAILED
	ControllerAlterSyncStateSetFailed    ResponseCode = 2013 // CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
	ControllerBrokerIDInvalid            ResponseCode = 2014 // CONTROLLER_BROKER_ID_INVALID
	ControllerJRaftInternalError         ResponseCode = 2015 // CONTROLLER_JRAFT_INTERNAL_ERROR
	ControllerBrokerLiveInfoNotExists    ResponseCode = 2016 // CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS
	UserNotExist                         ResponseCode = 3001 // USER_NOT_EXIST
	PolicyNotExist                       ResponseCode = 3002 // POLICY_NOT_EXIST
)

var requestNames = map[int32]string{
	10:   "SEND_MESSAGE",
	11:   "PULL_MESSAGE",
	12:   "QUERY_MESSAGE",
	13:   "QUERY_BROKER_OFFSET",
	14:   "QUERY_CONSUMER_OFFSET",
	15:   "UPDATE_CONSUMER_OFFSET",
	17:   "UPDATE_AND_CREATE_TOPIC",
	18:   "UPDATE_AND_CREATE_TOPIC_LIST",
	21:   "GET_ALL_TOPIC_CONFIG",
	22:   "GET_TOPIC_CONFIG_LIST",
	23:   "GET_TOPIC_NAME_LIST",
	25:   "UPDATE_BROKER_CONFIG",
	26:   "GET_BROKER_CONFIG",
	27:   "TRIGGER_DELETE_FILES",
	28:   "GET_BROKER_RUNTIME_INFO",
	29:   "SEARCH_OFFSET_BY_TIMESTAMP",
	30:   "GET_MAX_OFFSET",
	31:   "GET_MIN_OFFSET",
	32:   "GET_EARLIEST_MSG_STORETIME",
	33:   "VIEW_MESSAGE_BY_ID",
	34:   "HEART_BEAT",
	35:   "UNREGISTER_CLIENT",
	36:   "CONSUMER_SEND_MSG_BACK",
	37:   "END_TRANSACTION",
	38:   "GET_CONSUMER_LIST_BY_GROUP",
	39:   "CHECK_TRANSACTION_STATE",
	40:   "NOTIFY_CONSUMER_IDS_CHANGED",
	41:   "LOCK_BATCH_MQ",
	42:   "UNLOCK_BATCH_MQ",
	43:   "GET_ALL_CONSUMER_OFFSET",
	45:   "GET_ALL_DELAY_OFFSET",
	46:   "CHECK_CLIENT_CONFIG",
	47:   "GET_CLIENT_CONFIG",
	60:   "GET_TIMER_CHECK_POINT",
	61:   "GET_TIMER_METRICS",
	100:  "PUT_KV_CONFIG",
	101:  "GET_KV_CONFIG",
	102:  "DELETE_KV_CONFIG",
	103:  "REGISTER_BROKER",
	104:  "UNREGISTER_BROKER",
	105:  "GET_ROUTEINFO_BY_TOPIC",
	106:  "GET_BROKER_CLUSTER_INFO",
	200:  "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	201:  "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	202:  "GET_TOPIC_STATS_INFO",
	203:  "GET_CONSUMER_CONNECTION_LIST",
	204:  "GET_PRODUCER_CONNECTION_LIST",
	205:  "WIPE_WRITE_PERM_OF_BROKER",
	206:  "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	207:  "DELETE_SUBSCRIPTIONGROUP",
	208:  "GET_CONSUME_STATS",
	209:  "SUSPEND_CONSUMER",
	210:  "RESUME_CONSUMER",
	211:  "RESET_CONSUMER_OFFSET_IN_CONSUMER",
	212:  "RESET_CONSUMER_OFFSET_IN_BROKER",
	213:  "ADJUST_CONSUMER_THREAD_POOL",
	214:  "WHO_CONSUME_THE_MESSAGE",
	215:  "DELETE_TOPIC_IN_BROKER",
	216:  "DELETE_TOPIC_IN_NAMESRV",
	217:  "REGISTER_TOPIC_IN_NAMESRV",
	219:  "GET_KVLIST_BY_NAMESPACE",
	220:  "RESET_CONSUMER_CLIENT_OFFSET",
	221:  "GET_CONSUMER_STATUS_FROM_CLIENT",
	222:  "INVOKE_BROKER_TO_RESET_OFFSET",
	223:  "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	300:  "QUERY_TOPIC_CONSUME_BY_WHO",
	224:  "GET_TOPICS_BY_CLUSTER",
	225:  "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST",
	343:  "QUERY_TOPICS_BY_CONSUMER",
	345:  "QUERY_SUBSCRIPTION_BY_CONSUMER",
	301:  "REGISTER_FILTER_SERVER",
	302:  "REGISTER_MESSAGE_FILTER_CLASS",
	303:  "QUERY_CONSUME_TIME_SPAN",
	304:  "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	305:  "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	306:  "CLEAN_EXPIRED_CONSUMEQUEUE",
	307:  "GET_CONSUMER_RUNNING_INFO",
	308:  "QUERY_CORRECTION_OFFSET",
	309:  "CONSUME_MESSAGE_DIRECTLY",
	310:  "SEND_MESSAGE_V2",
	311:  "GET_UNIT_TOPIC_LIST",
	312:  "GET_HAS_UNIT_SUB_TOPIC_LIST",
	313:  "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
	314:  "CLONE_GROUP_OFFSET",
	315:  "VIEW_BROKER_STATS_DATA",
	316:  "CLEAN_UNUSED_TOPIC",
	317:  "GET_BROKER_CONSUME_STATS",
	318:  "UPDATE_NAMESRV_CONFIG",
	319:  "GET_NAMESRV_CONFIG",
	320:  "SEND_BATCH_MESSAGE",
	321:  "QUERY_CONSUME_QUEUE",
	322:  "QUERY_DATA_VERSION",
	323:  "RESUME_CHECK_HALF_MESSAGE",
	324:  "SEND_REPLY_MESSAGE",
	325:  "SEND_REPLY_MESSAGE_V2",
	326:  "PUSH_REPLY_MESSAGE_TO_CLIENT",
	327:  "ADD_WRITE_PERM_OF_BROKER",
	328:  "GET_ALL_PRODUCER_INFO",
	329:  "DELETE_EXPIRED_COMMITLOG",
	351:  "GET_TOPIC_CONFIG",
	352:  "GET_SUBSCRIPTIONGROUP_CONFIG",
	353:  "UPDATE_AND_GET_GROUP_FORBIDDEN",
	354:  "CHECK_ROCKSDB_CQ_WRITE_PROGRESS",
	355:  "EXPORT_ROCKSDB_CONFIG_TO_JSON",
	361:  "LITE_PULL_MESSAGE",
	370:  "RECALL_MESSAGE",
	400:  "QUERY_ASSIGNMENT",
	401:  "SET_MESSAGE_REQUEST_MODE",
	402:  "GET_ALL_MESSAGE_REQUEST_MODE",
	513:  "UPDATE_AND_CREATE_STATIC_TOPIC",
	901:  "GET_BROKER_MEMBER_GROUP",
	902:  "ADD_BROKER",
	903:  "REMOVE_BROKER",
	904:  "BROKER_HEARTBEAT",
	905:  "NOTIFY_MIN_BROKER_ID_CHANGE",
	906:  "EXCHANGE_BROKER_HA_INFO",
	907:  "GET_BROKER_HA_STATUS",
	908:  "RESET_MASTER_FLUSH_OFFSET",
	1001: "CONTROLLER_ALTER_SYNC_STATE_SET",
	1002: "CONTROLLER_ELECT_MASTER",
	1003: "CONTROLLER_REGISTER_BROKER",
	1004: "CONTROLLER_GET_REPLICA_INFO",
	1005: "CONTROLLER_GET_METADATA_INFO",
	1006: "CONTROLLER_GET_SYNC_STATE_DATA",
	1007: "GET_BROKER_EPOCH_CACHE",
	1008: "NOTIFY_BROKER_ROLE_CHANGED",
	1009: "UPDATE_CONTROLLER_CONFIG",
	1010: "GET_CONTROLLER_CONFIG",
	1011: "CLEAN_BROKER_DATA",
	1012: "CONTROLLER_GET_NEXT_BROKER_ID",
	1013: "CONTROLLER_APPLY_BROKER_ID",
	2001: "UPDATE_COLD_DATA_FLOW_CTR_CONFIG",
	2002: "REMOVE_COLD_DATA_FLOW_CTR_CONFIG",
	2003: "GET_COLD_DATA_FLOW_CTR_INFO",
	2004: "SET_COMMITLOG_READ_MODE",
	3001: "AUTH_CREATE_USER",
	3002: "AUTH_UPDATE_USER",
	3003: "AUTH_DELETE_USER",
	3004: "AUTH_GET_USER",
	3005: "AUTH_LIST_USER",
	3006: "AUTH_CREATE_ACL",
	3007: "AUTH_UPDATE_ACL",
	3008: "AUTH_DELETE_ACL",
	3009: "AUTH_GET_ACL",
	3010: "AUTH_LIST_ACL",
}

var responseNames = map[int32]string{
	0:    "SUCCESS",
	1:    "SYSTEM_ERROR",
	2:    "SYSTEM_BUSY",
	3:    "REQUEST_CODE_NOT_SUPPORTED",
	4:    "TRANSACTION_FAILED",
	10:   "FLUSH_DISK_TIMEOUT",
	11:   "SLAVE_NOT_AVAILABLE",
	12:   "FLUSH_SLAVE_TIMEOUT",
	13:   "MESSAGE_ILLEGAL",
	14:   "SERVICE_NOT_AVAILABLE",
	15:   "VERSION_NOT_SUPPORTED",
	16:   "NO_PERMISSION",
	17:   "TOPIC_NOT_EXIST",
	18:   "TOPIC_EXIST_ALREADY",
	19:   "PULL_NOT_FOUND",
	20:   "PULL_RETRY_IMMEDIATELY",
	21:   "PULL_OFFSET_MOVED",
	22:   "QUERY_NOT_FOUND",
	23:   "SUBSCRIPTION_PARSE_FAILED",
	24:   "SUBSCRIPTION_NOT_EXIST",
	25:   "SUBSCRIPTION_NOT_LATEST",
	26:   "SUBSCRIPTION_GROUP_NOT_EXIST",
	27:   "FILTER_DATA_NOT_EXIST",
	28:   "FILTER_DATA_NOT_LATEST",
	29:   "INVALID_PARAMETER",
	200:  "TRANSACTION_SHOULD_COMMIT",
	201:  "TRANSACTION_SHOULD_ROLLBACK",
	202:  "TRANSACTION_STATE_UNKNOW",
	203:  "TRANSACTION_STATE_GROUP_WRONG",
	204:  "NO_BUYER_ID",
	205:  "NOT_IN_CURRENT_UNIT",
	206:  "CONSUMER_NOT_ONLINE",
	207:  "CONSUME_MSG_TIMEOUT",
	208:  "NO_MESSAGE",
	209:  "POLLING_FULL",
	210:  "POLLING_TIMEOUT",
	211:  "BROKER_NOT_EXIST",
	212:  "BROKER_DISPATCH_NOT_COMPLETE",
	213:  "BROADCAST_CONSUMPTION",
	215:  "FLOW_CONTROL",
	501:  "NOT_LEADER_FOR_QUEUE",
	604:  "ILLEGAL_OPERATION",
	1500: "GO_AWAY",
	2000: "CONTROLLER_FENCED_MASTER_EPOCH",
	2001: "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
	2002: "CONTROLLER_INVALID_MASTER",
	2003: "CONTROLLER_INVALID_REPLICAS",
	2004: "CONTROLLER_MASTER_NOT_AVAILABLE",
	2005: "CONTROLLER_INVALID_REQUEST",
	2006: "CONTROLLER_BROKER_NOT_ALIVE",
	2007: "CONTROLLER_NOT_LEADER",
	2008: "CONTROLLER_BROKER_METADATA_NOT_EXIST",
	2009: "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
	2010: "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
	2011: "CONTROLLER_MASTER_STILL_EXIST",
	2012: "CONTROLLER_ELECT_MASTER_FAILED",
	2013: "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
	2014: "CONTROLLER_BROKER_ID_INVALID",
	2015: "CONTROLLER_JRAFT_INTERNAL_ERROR",
	2016: "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
	3001: "USER_NOT_EXIST",
	3002: "POLICY_NOT_EXIST",
}

// RequestName is RocketMQ's name of a request code, or "CODE_<n>" when unknown.
func RequestName(code int32) string {
	if n, ok := requestNames[code]; ok {
		return n
	}
	return codeName(code)
}

// ResponseName is RocketMQ's name of a response code, or "CODE_<n>" when unknown.
func ResponseName(code int32) string {
	if n, ok := responseNames[code]; ok {
		return n
	}
	return codeName(code)
}

func codeName(code int32) string { return "CODE_" + strconv.Itoa(int(code)) }
