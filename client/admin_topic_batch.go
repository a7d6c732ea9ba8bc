package client

import (
	"context"
	"fmt"
	"sort"

	"github.com/samsamq/samsa/protocol"
)

// TopicBatchSize is how many topics one UPDATE_AND_CREATE_TOPIC_LIST
// carries (about 300 KiB of JSON).
const TopicBatchSize = 2000

// TopicBatchResult is what CreateTopics did on one broker.
type TopicBatchResult struct {
	Broker    string `json:"broker"`
	Addr      string `json:"addr"`
	Created   int    `json:"created"`
	Updated   int    `json:"updated"`
	Unchanged int    `json:"unchanged"`
}

// CreateTopics creates or updates many topics on every master selected by
// s (Cluster, Brokers; the other fields are ignored: each config says its
// own queues and perm), TopicBatchSize topics a request
// (UPDATE_AND_CREATE_TOPIC_LIST: one save and one registration a batch on
// the broker, which answers once the name servers route the batch).
// Unless s.Force, the brokers' tables are read first and a config that
// would shrink a topic's queues refuses the whole call (ErrTopicShrink);
// a table too large to read in one answer then refuses it too.
func (a *Admin) CreateTopics(ctx context.Context, tcs []protocol.TopicConfig, s TopicSpec) ([]TopicBatchResult, error) {
	targets := map[string]string{}
	if len(s.Brokers) > 0 {
		for _, addr := range s.Brokers {
			targets[addr] = addr
		}
	} else {
		m, err := a.Masters(ctx, s.Cluster)
		if err != nil {
			return nil, err
		}
		targets = m
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no master broker selected", ErrNoRoute)
	}
	seen := make(map[string]bool, len(tcs))
	for i := range tcs {
		tc := &tcs[i]
		if seen[tc.TopicName] {
			return nil, fmt.Errorf("client: topic %s twice in the list", tc.TopicName)
		}
		seen[tc.TopicName] = true
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = protocol.TopicFilterSingleTag
		}
	}
	names := make([]string, 0, len(targets))
	for name := range targets {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []TopicBatchResult
	for _, name := range names {
		addr := targets[name]
		res := TopicBatchResult{Broker: name, Addr: addr}
		var old map[string]protocol.TopicConfig
		if !s.Force {
			var err error
			if old, err = a.TopicConfigs(ctx, addr); err != nil {
				return out, fmt.Errorf("%w (the shrink check reads the broker's table; --force skips it)", err)
			}
		}
		var send []protocol.TopicConfig
		for _, tc := range tcs {
			o, exists := old[tc.TopicName]
			switch {
			case !exists:
				res.Created++
			case o.ReadQueueNums == tc.ReadQueueNums && o.WriteQueueNums == tc.WriteQueueNums && o.Perm == tc.Perm && o.Order == tc.Order:
				res.Unchanged++
				continue
			case max(tc.ReadQueueNums, tc.WriteQueueNums) < max(o.ReadQueueNums, o.WriteQueueNums):
				return out, fmt.Errorf("%w: topic %s has %d queues on %s; the list gives %d", ErrTopicShrink, tc.TopicName,
					max(o.ReadQueueNums, o.WriteQueueNums), name, max(tc.ReadQueueNums, tc.WriteQueueNums))
			default:
				res.Updated++
			}
			send = append(send, tc)
		}
		for start := 0; start < len(send); start += TopicBatchSize {
			batch := send[start:min(start+TopicBatchSize, len(send))]
			body, err := protocol.MarshalBody(protocol.CreateTopicListRequestBody{TopicConfigList: batch})
			if err != nil {
				return out, err
			}
			cctx, cancel := a.in.ctxTimeout(ctx)
			_, err = a.in.invoke(cctx, addr, protocol.NewRequest(protocol.UpdateAndCreateTopicList, nil, body))
			cancel()
			if err != nil {
				return out, fmt.Errorf("client: create topics %s.. on %s: %w", batch[0].TopicName, addr, err)
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// CreateTopicAt creates or updates one topic on the broker at addr with
// UPDATE_AND_CREATE_TOPIC, and returns once the broker answers (a Samsa
// broker answers once the name servers route the topic); no shrink check,
// no route lookup: the lab's way to create many topics fast.
func (a *Admin) CreateTopicAt(ctx context.Context, addr string, tc protocol.TopicConfig) error {
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = protocol.TopicFilterSingleTag
	}
	h := protocol.CreateTopicRequestHeader{Topic: tc.TopicName, DefaultTopic: "TBW102", ReadQueueNums: tc.ReadQueueNums,
		WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicFilterType: tc.TopicFilterType, TopicSysFlag: tc.TopicSysFlag, Order: tc.Order}
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	_, err := a.in.invoke(ctx, addr, protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil))
	if err != nil {
		return fmt.Errorf("client: create topic %s on %s: %w", tc.TopicName, addr, err)
	}
	return nil
}
