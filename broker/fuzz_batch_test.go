package broker

import (
	"bytes"
	"testing"
)

// FuzzDecodeBatch: a SEND_BATCH_MESSAGE body from anyone either splits
// into items that re-encode to the same bytes (apart from the ignored
// magic and CRC fields) or is refused; never a panic, never an item
// outside the body.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch([]batchItem{{Flag: 1, Body: []byte("a"), Properties: []byte("KEYS\x01k\x02")}, {Body: []byte("bb")}}), 16)
	f.Add(encodeBatch([]batchItem{{}}), 0)
	f.Add([]byte{0, 0, 0, 22, 0, 0}, 4)
	f.Fuzz(func(t *testing.T, body []byte, maxBody int) {
		items, err := decodeBatch(body, maxBody)
		if err != nil {
			return
		}
		for _, it := range items {
			if len(it.Body) > maxBody {
				t.Fatalf("body of %d bytes past maxBody %d", len(it.Body), maxBody)
			}
		}
		back := encodeBatch(items)
		if len(back) != len(body) {
			t.Fatalf("re-encoded %d bytes from %d", len(back), len(body))
		}
		// Zero the fields the decoder ignores, item by item, and compare.
		want := bytes.Clone(body)
		for off := 0; off < len(want); {
			total := int(uint32(want[off])<<24 | uint32(want[off+1])<<16 | uint32(want[off+2])<<8 | uint32(want[off+3]))
			clear(want[off+4 : off+12])
			off += total
		}
		if !bytes.Equal(back, want) {
			t.Fatal("a decoded batch does not re-encode to its bytes")
		}
	})
}
