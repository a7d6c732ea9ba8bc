package protocol

import (
	"hash/maphash"
	"sync/atomic"
)

// knownStrings are ext-field keys and common values that decoders return
// without allocating: every header field name of this package and RocketMQ's,
// and the usual small values. It is read-only after package init.
var knownStrings = func() map[string]string {
	words := []string{
		// values
		"", "0", "1", "-1", "2", "3", "4", "8", "16", "32", "true", "false", "TBW102", "TAG", "SQL92", "*",
		"GO", "JAVA", "JSON", "ROCKETMQ", "SINGLE_TAG", "MULTI_TAG",
		// SEND_MESSAGE_V2 letters
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n",
		// field names
		"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
		"flag", "properties", "reconsumeTimes", "unitMode", "batch", "maxReconsumeTimes", "bname", "lo", "ns",
		"nsd", "oway", "msgId", "queueOffset", "transactionId", "batchUniqId", "recallHandle", "offset", "group",
		"delayLevel", "originMsgId", "originTopic", "tranStateTableOffset", "commitLogOffset", "commitOrRollback",
		"fromTransactionCheck", "offsetMsgId", "consumerGroup", "maxMsgNums", "commitOffset",
		"suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "maxMsgBytes", "requestSource",
		"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset", "offsetDelta", "topicSysFlag",
		"groupSysFlag", "forbiddenType", "key", "maxNum", "beginTimestamp", "endTimestamp",
		"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset", "setZeroIfNotFound", "committed", "timestamp",
		"boundaryType", "acceptStandardJsonOnly", "brokerName", "brokerAddr", "clusterName", "haServerAddr",
		"brokerId", "heartbeatTimeoutMillis", "enableActingMaster", "compressed", "bodyCrc32", "masterAddr",
		"namespace", "value", "changed", "clientID", "clientId", "readQueueNums", "writeQueueNums", "perm",
		"topicFilterType", "order", "attributes", "totalTopicNum", "zoneName", "MSG_REGION", "TRACE_ON",
		"signature", "AccessKey", "SecurityToken", "Signature",
	}
	m := make(map[string]string, len(words))
	for _, w := range words {
		m[w] = w
	}
	return m
}()

// intern returns b as a string, without allocating when it is a known one.
func intern(b []byte) string {
	if s, ok := knownStrings[string(b)]; ok {
		return s
	}
	return string(b)
}

// recentStrings holds strings that repeat from one request to the next
// but are not known in advance: topic, group and broker names. A slot is
// picked by the bytes' hash and holds the last string seen there, so the
// cache stays bounded whatever the names are; a miss costs what
// string(b) costs, plus the slot's pointer.
var (
	recentStrings [256]atomic.Pointer[string]
	recentSeed    = maphash.MakeSeed()
)

// maxRecent is the longest string the recent cache keeps.
const maxRecent = 127

// internRecent returns b as a string, the cached one when b was seen last
// in its slot.
func internRecent(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxRecent {
		return string(b)
	}
	slot := &recentStrings[maphash.Bytes(recentSeed, b)%uint64(len(recentStrings))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}
