package protocol

import "encoding/json"

// Bodies a slave broker fetches from its master (RocketMQ's
// SlaveSynchronize): GET_ALL_TOPIC_CONFIG answers a
// TopicConfigSerializeWrapper (body_register.go), GET_ALL_CONSUMER_OFFSET a
// ConsumerOffsetSerializeWrapper, GET_ALL_SUBSCRIPTIONGROUP_CONFIG a
// SubscriptionGroupWrapper.

// ConsumerOffsetSerializeWrapper is GET_ALL_CONSUMER_OFFSET's answer (and
// the layout of consumerOffset.json): "topic@group" → queue id → the next
// offset the group consumes. fastjson writes the queue ids as bare
// numbers; UnmarshalBody reads those, MarshalBody writes them quoted.
type ConsumerOffsetSerializeWrapper struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	DataVersion DataVersion                `json:"dataVersion"`
}

// MarshalJSON writes an empty table as {}.
func (w ConsumerOffsetSerializeWrapper) MarshalJSON() ([]byte, error) {
	type plain ConsumerOffsetSerializeWrapper
	if w.OffsetTable == nil {
		w.OffsetTable = map[string]map[int32]int64{}
	}
	return json.Marshal(plain(w))
}

// SubscriptionGroupConfig is one consumer group's settings on a broker
// (RocketMQ's SubscriptionGroupConfig; its subscriptionDataSet and
// attributes are not kept). Fields absent from decoded JSON take
// RocketMQ's defaults (DefaultSubscriptionGroup), not zero.
type SubscriptionGroupConfig struct {
	GroupName              string `json:"groupName"`
	ConsumeEnable          bool   `json:"consumeEnable"`
	ConsumeFromMinEnable   bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable bool   `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly  bool   `json:"consumeMessageOrderly"`
	RetryQueueNums         int32  `json:"retryQueueNums"`
	RetryMaxTimes          int32  `json:"retryMaxTimes"`
	// BrokerID is the broker a consumer reading in time is sent to (a
	// pull answer's suggestWhichBrokerId); 0, the master, by default.
	BrokerID int64 `json:"brokerId"`
	// WhichBrokerWhenConsumeSlowly is the broker a consumer reading far
	// behind is sent to when slaveReadEnable is on; 1 by default.
	WhichBrokerWhenConsumeSlowly   int64 `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool  `json:"notifyConsumerIdsChangedEnable"`
	GroupSysFlag                   int32 `json:"groupSysFlag"`
	ConsumeTimeoutMinute           int32 `json:"consumeTimeoutMinute"`
}

// DefaultSubscriptionGroup is the config RocketMQ gives a group nobody
// configured.
func DefaultSubscriptionGroup(name string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{GroupName: name, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: MasterID,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true, ConsumeTimeoutMinute: 15}
}

// UnmarshalJSON starts from RocketMQ's defaults, so a partial object
// (what an admin tool may send) means what it means in Java.
func (c *SubscriptionGroupConfig) UnmarshalJSON(b []byte) error {
	type plain SubscriptionGroupConfig
	p := plain(DefaultSubscriptionGroup(""))
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = SubscriptionGroupConfig(p)
	return nil
}

// SubscriptionGroupWrapper is GET_ALL_SUBSCRIPTIONGROUP_CONFIG's answer
// (and the layout of subscriptionGroup.json).
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                        `json:"dataVersion"`
}

// MarshalJSON writes an empty table as {}.
func (w SubscriptionGroupWrapper) MarshalJSON() ([]byte, error) {
	type plain SubscriptionGroupWrapper
	if w.SubscriptionGroupTable == nil {
		w.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	return json.Marshal(plain(w))
}
