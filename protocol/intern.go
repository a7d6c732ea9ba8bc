package protocol

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
