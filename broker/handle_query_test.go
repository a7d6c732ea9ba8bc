package broker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

func queryReq(topic, key string, maxNum int32, begin, end int64, uniq bool) *protocol.Command {
	h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: maxNum, BeginTimestamp: begin, EndTimestamp: end}
	req := protocol.NewRequest(protocol.QueryMessage, h.Encode(), nil)
	if uniq {
		req.SetExt(uniqueKeyQueryFlag, "true")
	}
	return req
}

// keysOf returns a record's KEYS (split) and UNIQ_KEY.
func keysOf(r record.Record) []string {
	p := record.ParseProperties(r.Properties)
	return append(strings.Fields(p["KEYS"]), p["UNIQ_KEY"])
}

// sendKeyed sends n messages to topic: message i has KEYS "order-<i%3>
// all" and UNIQ_KEY "<prefix><i>", and body "<prefix><i>".
func sendKeyed(t *testing.T, c *rawClient, topic, prefix string, n int) {
	t.Helper()
	for i := range n {
		props := map[string]string{"KEYS": fmt.Sprintf("order-%d all", i%3), "UNIQ_KEY": fmt.Sprintf("%s%d", prefix, i)}
		if r := c.call(sendReq(topic, int32(i%2), []byte(fmt.Sprintf("%s%d", prefix, i)), props)); r.Code != protocol.Success {
			t.Fatalf("send: %s", r)
		}
	}
}

// TestQueryMessageByKey: QUERY_MESSAGE answers exactly the messages of the
// topic holding the key, in RocketMQ's shape (records one after another,
// the index's last update in the header), QUERY_NOT_FOUND otherwise.
func TestQueryMessageByKey(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("qm", 2))
	c.call(createTopicReq("qm2", 2))
	sendKeyed(t, c, "qm", "u", 30)
	sendKeyed(t, c, "qm2", "v", 6)
	all := int64(1) << 62
	var r *protocol.Command
	waitFor(t, func() bool {
		r = c.call(queryReq("qm", "all", 64, 0, all, false))
		return r.Code == protocol.Success && len(decodeRecords(t, r.Body)) == 30
	}, "30 records with key all")
	if ext64(t, r, "indexLastUpdatePhyoffset") <= 0 || ext64(t, r, "indexLastUpdateTimestamp") <= 0 {
		t.Fatalf("header: %s", r)
	}
	r = c.call(queryReq("qm", "order-1", 64, 0, all, false))
	recs := decodeRecords(t, r.Body)
	if r.Code != protocol.Success || len(recs) != 10 {
		t.Fatalf("order-1: %s, %d records", r, len(recs))
	}
	for _, rec := range recs {
		if string(rec.Topic) != "qm" || !slices.Contains(keysOf(rec), "order-1") {
			t.Fatalf("order-1 answered a record of %s with keys %v", rec.Topic, keysOf(rec))
		}
	}
	// A unique key: that one message (maxNum is the broker's 32 then).
	r = c.call(queryReq("qm", "u17", 1, 0, all, true))
	if recs := decodeRecords(t, r.Body); r.Code != protocol.Success || len(recs) != 1 || string(recs[0].Body) != "u17" {
		t.Fatalf("u17: %s", r)
	}
	// maxNum, capped at 64.
	if recs := decodeRecords(t, c.call(queryReq("qm", "all", 4, 0, all, false)).Body); len(recs) != 4 {
		t.Fatalf("maxNum 4: %d records", len(recs))
	}
	// Not found: another key, a key of the other topic only, a time range
	// before every message, a space-joined KEYS value.
	for _, q := range []*protocol.Command{
		queryReq("qm", "nope", 64, 0, all, false),
		queryReq("qm", "v3", 64, 0, all, true),
		queryReq("qm", "all", 64, 0, time.Now().Add(-time.Hour).UnixMilli(), false),
		queryReq("qm", "order-1 all", 64, 0, all, false),
	} {
		if r := c.call(q); r.Code != protocol.QueryNotFound || len(r.Body) != 0 {
			t.Fatalf("%v: %s", q.ExtFields, r)
		}
	}
	if r := c.call(protocol.NewRequest(protocol.QueryMessage, map[string]string{"topic": "qm"}, nil)); r.Code == protocol.Success {
		t.Fatalf("no key: %s", r)
	}
}

// TestQueryMessageIndexDisabled: messageIndexEnable=false answers
// QUERY_NOT_FOUND, saying why.
func TestQueryMessageIndexDisabled(t *testing.T) {
	b := startBroker(t, "", func(c *Config) { _ = c.Set("messageIndexEnable", "false") })
	defer b.Close()
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq("qd", 2))
	sendKeyed(t, c, "qd", "u", 2)
	r := c.call(queryReq("qd", "all", 64, 0, 1<<62, false))
	if r.Code != protocol.QueryNotFound || !strings.Contains(r.Remark, "messageIndexEnable") {
		t.Fatalf("%s", r)
	}
}

// TestSlaveAnswersQueryMessage: a slave indexes what it replicates and
// answers QUERY_MESSAGE from its own index.
func TestSlaveAnswersQueryMessage(t *testing.T) {
	dev := startReplicated(t, AsyncMaster, nil)
	master, slave := dev.Broker, dev.Slaves[0]
	mc := dialRaw(t, master.Addr())
	if r := mc.call(createTopicReq("sq", 2)); r.Code != protocol.Success {
		t.Fatalf("create topic: %s", r)
	}
	sendKeyed(t, mc, "sq", "u", 12)
	sc := dialRaw(t, slave.Addr())
	waitLong(t, func() bool {
		r := sc.call(queryReq("sq", "order-2", 64, 0, 1<<62, false))
		return r.Code == protocol.Success && len(decodeRecords(t, r.Body)) == 4
	}, "the slave's index answers order-2")
	r := sc.call(queryReq("sq", "u5", 64, 0, 1<<62, true))
	if recs := decodeRecords(t, r.Body); r.Code != protocol.Success || len(recs) != 1 || string(recs[0].Body) != "u5" {
		t.Fatalf("u5 on the slave: %s", r)
	}
}
