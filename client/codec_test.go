package client

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/samsamq/samsa/storage/record"
)

func encodeRecord(t *testing.T, f record.Fields) []byte {
	t.Helper()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if _, err := record.Encode(b, &f); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodePullBody(t *testing.T) {
	m := &Message{Topic: "orders", Body: []byte("hello"), Tags: "TagA", Keys: []string{"k1", "k2"},
		ShardingKey: "user-7", Properties: map[string]string{"color": "red"}}
	props := appendProperties(nil, m, "ABCDEF")
	store := netip.MustParseAddrPort("10.0.0.5:10911")
	r1 := encodeRecord(t, record.Fields{QueueID: 3, Flag: 9, QueueOffset: 41, PhysOffset: 1000, BornTimestamp: 1700000000000,
		StoreTimestamp: 1700000000005, StoreHost: store, BornHost: netip.MustParseAddrPort("10.0.0.9:5555"),
		Topic: "orders", Body: m.Body, Properties: props})
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(bytes.Repeat([]byte("big "), 1000))
	zw.Close()
	r2 := encodeRecord(t, record.Fields{QueueID: 3, QueueOffset: 42, PhysOffset: 1000 + int64(len(r1)), SysFlag: record.FlagCompressed,
		StoreHost: store, Topic: "orders", Body: z.Bytes(), Properties: []byte("TAGS\x01TagB\x02")})
	msgs, err := decodeMessages(append(r1, r2...), "broker-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	a := msgs[0]
	if a.Queue != (MessageQueue{"orders", "broker-a", 3}) || a.QueueOffset != 41 || a.CommitLogOffset != 1000 || a.Flag != 9 {
		t.Fatalf("first: %+v", a)
	}
	if string(a.Body) != "hello" || a.Tags != "TagA" || len(a.Keys) != 2 || a.Keys[1] != "k2" || a.ShardingKey != "user-7" {
		t.Fatalf("first contents: %+v", a)
	}
	if a.Property("color") != "red" || a.MsgID != "ABCDEF" || a.Property(PropertyCRC32) != "" {
		t.Fatalf("first properties: %v id %s", a.PropertyMap(), a.MsgID)
	}
	if a.BornTime.UnixMilli() != 1700000000000 || a.StoreTime.UnixMilli() != 1700000000005 || a.StoreHost != store {
		t.Fatalf("first times/hosts: %+v", a)
	}
	// RocketMQ's offset id: 0A000005 00002A9F 00000000000003E8.
	if want := "0A00000500002A9F00000000000003E8"; a.OffsetMsgID != want {
		t.Fatalf("offset id %s, want %s", a.OffsetMsgID, want)
	}
	b := msgs[1]
	if len(b.Body) != 4000 || b.SysFlag&record.FlagCompressed != 0 || b.Tags != "TagB" || b.MsgID != b.OffsetMsgID {
		t.Fatalf("second: %d bytes sysflag %d tags %q id %s", len(b.Body), b.SysFlag, b.Tags, b.MsgID)
	}
	// A torn body is an error, with the messages before it.
	got, err := decodeMessages(append(r1, r2[:30]...), "b")
	if err == nil || len(got) != 1 {
		t.Fatalf("torn body: %d messages, %v", len(got), err)
	}
}

func TestBatchEntryLayout(t *testing.T) {
	m := &Message{Topic: "t", Body: []byte("abc"), Flag: 7, Tags: "x"}
	b, err := appendBatchEntry([]byte("prefix"), m, "ID1")
	if err != nil {
		t.Fatal(err)
	}
	e := b[6:]
	be := binary.BigEndian
	if int(be.Uint32(e)) != len(e) || be.Uint32(e[4:]) != 0 || be.Uint32(e[8:]) != 0 || be.Uint32(e[12:]) != 7 {
		t.Fatalf("fixed fields % x", e[:16])
	}
	if be.Uint32(e[16:]) != 3 || string(e[20:23]) != "abc" {
		t.Fatalf("body % x", e[16:23])
	}
	pl := int(be.Uint16(e[23:]))
	if props := string(e[25:]); len(props) != pl || props != "TAGS\x01x\x02UNIQ_KEY\x01ID1\x02" {
		t.Fatalf("properties %q (len field %d)", props, pl)
	}
}

func TestTagFilter(t *testing.T) {
	for _, c := range []struct {
		expr, tags string
		want       bool
	}{{"*", "a", true}, {"", "", true}, {"a || b", "b", true}, {"a||b", "c", false}, {"a", "", false}} {
		if got := parseTagFilter(c.expr).match(c.tags); got != c.want {
			t.Errorf("%q matches %q: %v", c.expr, c.tags, got)
		}
	}
}

func TestValidateMessage(t *testing.T) {
	bad := []*Message{nil, {Body: []byte("x")}, {Topic: "t"}, {Topic: "t", Body: []byte("x"), Properties: map[string]string{"a\x01": "b"}},
		{Topic: "t", Body: make([]byte, 11)}}
	for i, m := range bad {
		if err := validateMessage(m, 10); err == nil {
			t.Errorf("message %d accepted", i)
		}
	}
	if err := validateMessage(&Message{Topic: "t", Body: []byte("x")}, 10); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeRefusesCorruptRecord: a byte flipped anywhere in a record (the
// body, a property, the header) fails the client's CRC check, and the
// answer is refused with an error naming the queue and the offset; with
// the check off the body flip goes through.
func TestDecodeRefusesCorruptRecord(t *testing.T) {
	store := netip.MustParseAddrPort("10.0.0.5:10911")
	var body []byte
	for i := range 3 {
		body = append(body, encodeRecord(t, record.Fields{QueueID: 2, QueueOffset: int64(10 + i), PhysOffset: int64(len(body)),
			StoreHost: store, Topic: "orders", Body: []byte(fmt.Sprintf("body-%d-%0100d", i, i)), Properties: []byte("TAGS\x01a\x02")})...)
	}
	size := int(binary.BigEndian.Uint32(body))
	for _, at := range []int{size + 100, size + record.OffBornTime, 2*size - 25} { // body, header, a property of the second
		bad := bytes.Clone(body)
		bad[at] ^= 0x20
		msgs, err := decodeAnswer(bad, decodeOptions{brokerName: "b", verify: true, pullOffset: 10})
		var ce *CorruptMessageError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorruptMessage) {
			t.Fatalf("flip at %d: %v", at, err)
		}
		if len(msgs) != 1 || ce.Topic != "orders" || ce.QueueID != 2 || ce.PullOffset != 10 {
			t.Fatalf("flip at %d: %d messages before it, error %+v", at, len(msgs), ce)
		}
		for _, want := range []string{"orders", "queue 2", "pull from 10"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not name %q", err, want)
			}
		}
	}
	bad := bytes.Clone(body)
	bad[size+100] ^= 0x20
	if msgs, err := decodeAnswer(bad, decodeOptions{brokerName: "b"}); err != nil || len(msgs) != 3 {
		t.Fatalf("check off: %d messages, %v", len(msgs), err)
	}
	// A record stored by a RocketMQ broker has no whole-record CRC: its
	// body CRC is checked.
	f := record.Fields{QueueID: 1, StoreHost: store, Topic: "t", Body: []byte("plain body of some length to pass the minimum"), Properties: []byte("TAGS\x01a\x02")}
	n, _ := f.Size()
	n -= record.CRCReservedLen
	r := make([]byte, n)
	binary.BigEndian.PutUint32(r, uint32(n))
	full := encodeRecord(t, f)
	copy(r[4:], full[4:n-2-len(f.Properties)])
	binary.BigEndian.PutUint16(r[n-2-len(f.Properties):], uint16(len(f.Properties)))
	copy(r[n-len(f.Properties):], f.Properties)
	if msgs, err := decodeAnswer(r, decodeOptions{verify: true}); err != nil || len(msgs) != 1 || string(msgs[0].Body) != "plain body of some length to pass the minimum" {
		t.Fatalf("record without the CRC property: %v", err)
	}
	bi := bytes.Index(r, []byte("plain"))
	r[bi] ^= 1
	if _, err := decodeAnswer(r, decodeOptions{verify: true}); !errors.Is(err, ErrCorruptMessage) || !errors.Is(err, record.ErrBodyCRC) {
		t.Fatalf("bad body CRC without the CRC property: %v", err)
	}
}

// TestDecodedMessageOutlivesTheNextAnswer: what a message reads (body,
// tags, id, properties) stays as received while later answers decode.
func TestDecodedMessageOutlivesTheNextAnswer(t *testing.T) {
	store := netip.MustParseAddrPort("10.0.0.5:10911")
	answer := func(tag string) []byte {
		return encodeRecord(t, record.Fields{QueueID: 1, StoreHost: store, Topic: "t", Body: []byte("body-" + tag),
			Properties: []byte("TAGS\x01" + tag + "\x02UNIQ_KEY\x01id-" + tag + "\x02color\x01" + tag + "\x02")})
	}
	first, err := decodeMessages(answer("one"), "b")
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := decodeMessages(answer("two"), "b"); err != nil {
			t.Fatal(err)
		}
	}
	m := first[0]
	if string(m.Body) != "body-one" || m.Tags != "one" || m.MsgID != "id-one" || m.Property("color") != "one" ||
		m.PropertyMap()["color"] != "one" || m.Properties != nil || m.Property(PropertyCRC32) != "" {
		t.Fatalf("held message changed: %+v %v", m, m.PropertyMap())
	}
}
