package sql92

import "testing"

// BenchmarkMatch measures one message's evaluation (ns/op is ns per
// message): a selector of three conditions over a message of eight
// properties, as a producer of the official client writes them.
func BenchmarkMatch(b *testing.B) {
	msg := []byte("KEYS\x01order-1234\x02TAGS\x01red\x02UNIQ_KEY\x017F0000010B8E18B4AAC2585E5C0D0000\x02" +
		"WAIT\x01true\x02region\x01eu-west\x02amount\x01250\x02customer\x01c-991\x02priority\x013\x02")
	for _, bc := range []struct{ name, expr string }{
		{"cmp", "amount > 100"},
		{"three", "amount > 100 AND TAGS IN ('red', 'blue') AND region = 'eu-west'"},
		{"between-or", "priority BETWEEN 1 AND 5 OR customer STARTSWITH 'vip'"},
		{"miss", "nosuch = 'x'"},
	} {
		e, err := Compile(bc.expr)
		if err != nil {
			b.Fatal(err)
		}
		if !e.Match(msg) && bc.name != "miss" {
			b.Fatalf("%s does not match", bc.expr)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for i := 0; i < b.N; i++ {
				e.Match(msg)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Compile("amount > 100 AND TAGS IN ('red', 'blue') AND region = 'eu-west'"); err != nil {
			b.Fatal(err)
		}
	}
}
