package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

// readTopicFile reads `topic create --from-file`: RocketMQ's topics.json
// ({"topicConfigTable": {...}}), a CreateTopicListRequestBody
// ({"topicConfigList": [...]}), or text with a topic a line ("TOPIC" or
// "TOPIC QUEUES"; blank lines and # comments skipped). Text lines take
// queues, perm and order from the flags.
func readTopicFile(path string, queues, perm int32, order bool) ([]protocol.TopicConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		var f struct {
			TopicConfigTable map[string]protocol.TopicConfig `json:"topicConfigTable"`
			TopicConfigList  []protocol.TopicConfig          `json:"topicConfigList"`
		}
		if err := json.Unmarshal(t, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out := f.TopicConfigList
		names := make([]string, 0, len(f.TopicConfigTable))
		for name := range f.TopicConfigTable {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			tc := f.TopicConfigTable[name]
			tc.TopicName = name
			out = append(out, tc)
		}
		return out, nil
	}
	var out []protocol.TopicConfig
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		q := queues
		if len(f) > 2 {
			return nil, fmt.Errorf("%s:%d: want TOPIC [QUEUES], got %q", path, n, line)
		}
		if len(f) == 2 {
			v, err := strconv.Atoi(f[1])
			if err != nil || v < 1 {
				return nil, fmt.Errorf("%s:%d: queues %q: want a count of at least 1", path, n, f[1])
			}
			q = int32(v)
		}
		out = append(out, protocol.TopicConfig{TopicName: f[0], ReadQueueNums: q, WriteQueueNums: q, Perm: perm,
			TopicFilterType: protocol.TopicFilterSingleTag, Order: order})
	}
	return out, sc.Err()
}

// createTopicsFromFile runs Admin.CreateTopics and prints what it did.
func createTopicsFromFile(cf *clientFlags, tcs []protocol.TopicConfig, s client.TopicSpec) error {
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	res, err := a.CreateTopics(ctx, tcs, s)
	if cf.json {
		if perr := printJSON(map[string]any{"topics": len(tcs), "brokers": res}); perr != nil && err == nil {
			err = perr
		}
		return err
	}
	for _, r := range res {
		fmt.Printf("%s (%s): %d topics created, %d updated, %d unchanged\n", r.Broker, r.Addr, r.Created, r.Updated, r.Unchanged)
	}
	return err
}
