package bench

import (
	"net/netip"

	"github.com/samsamq/samsa/storage/record"
)

// The bench's message: one topic, a TAGS property, IPv4 hosts.
const (
	benchTopic = "bench"
	benchTags  = "bench"
)

var (
	benchProps     = record.AppendProperty(nil, "TAGS", benchTags)
	benchBornHost  = netip.MustParseAddrPort("127.0.0.1:40000")
	benchStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
)

// RecordSize is the stored size of the bench's message with an n-byte body.
func RecordSize(n int) int {
	f := record.Fields{Topic: benchTopic, Body: make([]byte, n), Properties: benchProps,
		BornHost: benchBornHost, StoreHost: benchStoreHost}
	size, err := f.Size()
	if err != nil {
		panic("bench: the bench message does not encode: " + err.Error())
	}
	return size
}
