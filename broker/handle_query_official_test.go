package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/samsamq/samsa/protocol"
)

// officialSent is what the official producer sent (written by the child).
type officialSent struct {
	MsgID       string // the client's unique id (UNIQ_KEY)
	OffsetMsgID string
	Key         string
}

const officialQueryTopic = "official-query"

// TestOfficialClientQueryMessage: messages the official Go producer sends
// (its KEYS and its generated UNIQ_KEY msgId) are found by QUERY_MESSAGE,
// and the answer decodes with the official client's own decoder
// (primitive.DecodeMessage) into those messages. The official Go client
// (v2) has no public query call of its own: it only defines the request
// header, in an internal package, so the query is sent raw here.
func TestOfficialClientQueryMessage(t *testing.T) {
	dev, err := startCluster(clusterOptions{Dir: t.TempDir(), Logger: quietLogger(), Broker: Config{MappedFileSizeCommitLog: 8 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	c := dialRaw(t, dev.BrokerAddr())
	c.call(createTopicReq(officialQueryTopic, 4))
	sentFile := filepath.Join(t.TempDir(), "sent.json")
	cmd, out := startOfficialChild(t, "query", dev, "SAMSA_SENT="+sentFile)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("official producer: %v\n%s", err, out)
	}
	b, err := os.ReadFile(sentFile)
	if err != nil {
		t.Fatal(err)
	}
	var sent []officialSent
	if err := json.Unmarshal(b, &sent); err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]string{}
	for _, s := range sent {
		byKey[s.Key] = append(byKey[s.Key], s.MsgID)
	}
	query := func(key string, uniq bool) []*primitive.MessageExt {
		r := c.call(queryReq(officialQueryTopic, key, 64, 0, 1<<62, uniq))
		if r.Code == protocol.QueryNotFound {
			return nil // not indexed yet: waitFor asks again
		}
		if r.Code != protocol.Success {
			t.Fatalf("query %s: %s", key, r)
		}
		return primitive.DecodeMessage(r.Body)
	}
	waitFor(t, func() bool { // QUERY_NOT_FOUND until the dispatcher has indexed it
		r := c.call(queryReq(officialQueryTopic, sent[len(sent)-1].Key, 64, 0, 1<<62, false))
		return r.Code == protocol.Success && len(primitive.DecodeMessage(r.Body)) > 0
	}, "the last message indexed")
	for key, ids := range byKey {
		var got []string
		for _, m := range query(key, false) {
			if m.Topic != officialQueryTopic || m.GetKeys() != key {
				t.Fatalf("key %s: a message of %s with keys %q", key, m.Topic, m.GetKeys())
			}
			got = append(got, m.MsgId)
		}
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Fatalf("key %s: msgIds %v, sent %v", key, got, ids)
		}
	}
	for _, s := range sent[:3] {
		ms := query(s.MsgID, true)
		if len(ms) != 1 || ms[0].MsgId != s.MsgID || ms[0].OffsetMsgId != s.OffsetMsgID {
			t.Fatalf("msgId %s: %v", s.MsgID, ms)
		}
	}
}

// officialQueryPhase sends keyed messages with the official producer and
// writes what it sent to the file sentFile.
func officialQueryPhase(ns, sentFile string) error {
	p, err := newE2EProducer(ns, "query-producer")
	if err != nil {
		return err
	}
	defer p.Shutdown()
	var sent []officialSent
	for i := range 20 {
		key := fmt.Sprintf("okey-%d", i%4)
		m := primitive.NewMessage(officialQueryTopic, []byte(fmt.Sprintf("q-%d", i)))
		m.WithKeys([]string{key})
		r, err := p.SendSync(context.Background(), m)
		if err != nil {
			return err
		}
		if r.Status != primitive.SendOK {
			return fmt.Errorf("send %d: %v", i, r)
		}
		sent = append(sent, officialSent{MsgID: r.MsgID, OffsetMsgID: r.OffsetMsgID, Key: key})
	}
	b, err := json.Marshal(sent)
	if err != nil {
		return err
	}
	return os.WriteFile(sentFile, b, 0o644)
}
