package record

import "testing"

// TestUserPropertiesWithoutCRCProperty: a record stored by a broker that
// writes no CRC property keeps all its properties (the client helper found
// the last 20 bytes cut off).
func TestUserPropertiesWithoutCRCProperty(t *testing.T) {
	props := []byte("KEYS\x01order-000000000001\x02TAGS\x01a\x02")
	r := Record{Properties: props}
	if got := r.UserProperties(); string(got) != string(props) {
		t.Fatalf("UserProperties = %q, want %q", got, props)
	}
	withCRC := append(append([]byte(nil), props...), []byte(PropertyCRC32+"\x010123456789\x02")...)
	r = Record{Properties: withCRC}
	if got := r.UserProperties(); string(got) != string(props) {
		t.Fatalf("UserProperties = %q, want %q", got, props)
	}
}
