package protocol

import "testing"

// TestCodeValues spot-checks the generated constants against RocketMQ's
// RequestCode / ResponseCode (and what rocketmq-client-go uses).
func TestCodeValues(t *testing.T) {
	req := map[int32]int32{
		SendMessage: 10, PullMessage: 11, QueryMessage: 12, QueryConsumerOffset: 14, UpdateConsumerOffset: 15,
		UpdateAndCreateTopic: 17, GetAllTopicConfig: 21, SearchOffsetByTimestamp: 29, GetMaxOffset: 30,
		GetMinOffset: 31, GetEarliestMsgStoretime: 32, ViewMessageByID: 33, HeartBeat: 34, UnregisterClient: 35,
		ConsumerSendMsgBack: 36, EndTransaction: 37, GetConsumerListByGroup: 38, CheckTransactionState: 39,
		NotifyConsumerIdsChanged: 40, LockBatchMQ: 41, UnlockBatchMQ: 42, PutKVConfig: 100, GetKVConfig: 101,
		DeleteKVConfig: 102, RegisterBroker: 103, UnregisterBroker: 104, GetRouteInfoByTopic: 105,
		GetBrokerClusterInfo: 106, GetAllTopicListFromNameServer: 206, DeleteTopicInBroker: 215,
		DeleteTopicInNamesrv: 216, GetKVListByNamespace: 219, SendMessageV2: 310, SendBatchMessage: 320,
		QueryDataVersion: 322, SendReplyMessageV2: 325, BrokerHeartbeat: 904,
	}
	for got, want := range req {
		if got != want {
			t.Errorf("request code %d, want %d", got, want)
		}
	}
	res := map[int32]int32{
		Success: 0, SystemError: 1, SystemBusy: 2, RequestCodeNotSupported: 3, FlushDiskTimeout: 10,
		SlaveNotAvailable: 11, FlushSlaveTimeout: 12, MessageIllegal: 13, ServiceNotAvailable: 14, NoPermission: 16,
		TopicNotExist: 17, PullNotFound: 19, PullRetryImmediately: 20, PullOffsetMoved: 21, QueryNotFound: 22,
		SubscriptionParseFailed: 23, SubscriptionNotExist: 24, SubscriptionNotLatest: 25,
	}
	for got, want := range res {
		if got != want {
			t.Errorf("response code %d, want %d", got, want)
		}
	}
	if RequestName(SendMessageV2) != "SEND_MESSAGE_V2" || ResponseName(PullNotFound) != "PULL_NOT_FOUND" || RequestName(12345) != "CODE_12345" {
		t.Error("names")
	}
}
