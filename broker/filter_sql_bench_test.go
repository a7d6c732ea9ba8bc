package broker

import (
	"bytes"
	"testing"

	"github.com/samsamq/samsa/storage/record"
)

// BenchmarkSQLRecordFilter is the broker's work per stored record of an
// SQL92 pull (ns/op is ns per message): find the properties in the
// record, evaluate the selector. The record is a 1 KiB message with the
// properties the official client writes plus four of the user's.
func BenchmarkSQLRecordFilter(b *testing.B) {
	props := []byte("KEYS\x01order-1234\x02TAGS\x01red\x02UNIQ_KEY\x017F0000010B8E18B4AAC2585E5C0D0000\x02" +
		"WAIT\x01true\x02region\x01eu-west\x02amount\x01250\x02customer\x01c-991\x02priority\x013\x02")
	f := record.Fields{Topic: "orders", Body: bytes.Repeat([]byte("x"), 1024), Properties: props}
	n, err := f.Size()
	if err != nil {
		b.Fatal(err)
	}
	rec := make([]byte, n)
	if _, err := record.Encode(rec, &f); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, expr string }{
		{"cmp", "amount > 100"},
		{"three", "amount > 100 AND TAGS IN ('red', 'blue') AND region = 'eu-west'"},
	} {
		e, err := sqlCache.compile(bc.expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var r record.Record
				if record.DecodeUnchecked(rec, &r) != nil || !e.Match(r.Properties) {
					b.Fatal("no match")
				}
			}
		})
	}
}
