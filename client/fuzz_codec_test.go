package client

import (
	"net/netip"
	"testing"

	"github.com/samsamq/samsa/storage/record"
)

// FuzzDecodeMessages: a pull answer's body from a broker (or anything
// posing as one) decodes into messages or an error; never a panic.
func FuzzDecodeMessages(f *testing.F) {
	for _, fl := range []record.Fields{
		{QueueID: 1, QueueOffset: 7, PhysOffset: 100, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
			Topic: "t", Body: []byte("hello"), Properties: []byte("TAGS\x01a\x02KEYS\x01k\x02")},
		{Topic: "t", SysFlag: record.FlagCompressed, Body: []byte{0x78, 0x9c, 3, 0, 0, 0, 0, 1}},
	} {
		if n, err := fl.Size(); err == nil {
			b := make([]byte, n)
			if _, err := record.Encode(b, &fl); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 4})
	f.Add(make([]byte, 200))
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, _ := decodeMessages(body, "b")
		for _, m := range msgs {
			if m == nil {
				t.Fatal("nil message")
			}
		}
	})
}
