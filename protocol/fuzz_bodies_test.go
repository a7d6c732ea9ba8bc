package protocol

import (
	"bufio"
	"bytes"
	"net/netip"
	"testing"
)

// The request bodies and text lines a server decodes from anyone. Each
// target only asks that a decoder return (value or error) without
// panicking or allocating past its bounds, and that what it accepts
// survives a round trip where one is defined.

func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	body := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]TopicConfig{
			"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
		},
		DataVersion: DataVersion{Timestamp: 5, Counter: 6}}, FilterServerList: []string{"f:1"}}
	for _, v := range []int16{VersionV4_5_2, VersionV5_0_0} {
		if z, err := body.EncodeCompressed(v); err == nil {
			f.Add(z, true, v)
		}
	}
	if j, err := MarshalBody(body); err == nil {
		f.Add(j, false, VersionV4_5_2)
		f.Add(j, false, int16(1))
	}
	f.Add([]byte{}, true, VersionV5_0_0)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool, version int16) {
		b, err := DecodeRegisterBrokerBody(data, compressed, version)
		if err != nil {
			return
		}
		if b.TopicConfigSerializeWrapper.TopicConfigTable == nil {
			t.Fatal("accepted body has a nil topic table")
		}
	})
}

// FuzzUnmarshalBody feeds the JSON bodies clients send (heartbeats, lock
// batches, check-client) through the fastjson-tolerant decoder.
func FuzzUnmarshalBody(f *testing.F) {
	f.Add([]byte(`{"clientID":"c","producerDataSet":[{"groupName":"p"}],"consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionDataSet":[{"topic":"t","subString":"*","tagsSet":[],"codeSet":[]}]}]}`), uint8(0))
	f.Add([]byte(`{consumerGroup:"g",clientId:"c",mqSet:[{topic:"t",brokerName:"b",queueId:1}]}`), uint8(1))
	f.Add([]byte(`{"clientId":"c","group":"g","subscriptionData":{"topic":"t","expressionType":"SQL92","subString":"a > 1"}}`), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		var err error
		switch which % 3 {
		case 0:
			var v HeartbeatData
			err = UnmarshalBody(data, &v)
		case 1:
			var v LockBatchRequestBody
			err = UnmarshalBody(data, &v)
		default:
			var v CheckClientRequestBody
			err = UnmarshalBody(data, &v)
		}
		_ = err
	})
}

func FuzzTextLine(f *testing.F) {
	f.Add([]byte("stats\r\n"), 0)
	f.Add([]byte("stats ha\r\nversion\nquit\r\n"), 16)
	f.Add([]byte("STAT a 1\r\nSTAT b two words\r\nEND\r\n"), 0)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max > 1<<16 {
			max = 1 << 16
		}
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		for i := 0; i < 64; i++ {
			line, err := ReadTextLine(r, max)
			if limit := max; limit > 0 && len(line) > limit {
				t.Fatalf("line of %d bytes over the limit %d", len(line), limit)
			}
			cmd := ParseTextLine(line)
			for _, a := range cmd.Args {
				if a == "" {
					t.Fatal("empty argument")
				}
			}
			if err != nil {
				break
			}
		}
		_, _ = ReadStats(bufio.NewReader(bytes.NewReader(data)))
	})
}

func FuzzParseOffsetMsgID(f *testing.F) {
	f.Add(OffsetMsgID(netip.MustParseAddrPort("127.0.0.1:10911"), 12345))
	f.Add(OffsetMsgID(netip.MustParseAddrPort("[::1]:10911"), 1<<40))
	f.Add("zz")
	f.Fuzz(func(t *testing.T, id string) {
		host, off, err := ParseOffsetMsgID(id)
		if err != nil {
			return
		}
		back := OffsetMsgID(host, off)
		h2, o2, err := ParseOffsetMsgID(back)
		if err != nil || h2 != host || o2 != off {
			t.Fatalf("%q -> %v %d -> %q -> %v %d %v", id, host, off, back, h2, o2, err)
		}
	})
}
