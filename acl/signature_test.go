package acl

import (
	"maps"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// Golden signatures, computed outside Go from the rules (HMAC-SHA1 over the
// values in UTF-16 key order, then the body; Base64).
func TestSignatureGolden(t *testing.T) {
	cases := []struct {
		name   string
		ext    map[string]string
		body   string
		secret string
		want   string
		skip   []string
	}{
		{"send v2", map[string]string{"AccessKey": "rocketmq2", "a": "PG", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "0"}, "hello", "12345678", "BPczHG3BsI0FfaoFZXYkmYaiOV8=", nil},
		{"token signed (Java)", map[string]string{"AccessKey": "rocketmq2", "SecurityToken": "tok", "topic": "T"}, "", "12345678", "Acxyl+1toLhyorse/GyJkK3aFDs=", nil},
		{"token not signed (Go client)", map[string]string{"AccessKey": "rocketmq2", "SecurityToken": "tok", "topic": "T"}, "", "12345678", "msA2HLu5rmWfLoIZzBCi0WKUq2o=", []string{FieldSecurityToken}},
		{"UTF-16 order", map[string]string{"\uff01": "x", "\U0001F600": "y", "AccessKey": "ak12345"}, "", "secret1", "Z+Ux5eWLPlCUhPjhScd3LzNOvNs=", nil},
		{"access key only", map[string]string{"AccessKey": "rocketmq2"}, "", "12345678", "Ou1T58RIcyZWaTIwzkhJZWn/Zvs=", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Signature(c.secret, Content(c.ext, []byte(c.body), c.skip...)); got != c.want {
				t.Fatalf("signature %s, want %s", got, c.want)
			}
			ext := maps.Clone(c.ext)
			ext[FieldSignature] = c.want
			if !Verify(ext, []byte(c.body), c.secret) {
				t.Fatal("Verify refused the golden signature")
			}
			if Verify(ext, []byte(c.body+"x"), c.secret) {
				t.Fatal("Verify accepted a changed body")
			}
			if Verify(ext, []byte(c.body), c.secret+"x") {
				t.Fatal("Verify accepted another secret")
			}
			ext["zz"] = "1"
			if Verify(ext, []byte(c.body), c.secret) {
				t.Fatal("Verify accepted an added field")
			}
		})
	}
}

func TestSignRoundTrip(t *testing.T) {
	ext := Sign(map[string]string{"topic": "T", "queueId": "1"}, []byte("b"), "ak12345", "sk12345", "tok")
	if ext[FieldAccessKey] != "ak12345" || ext[FieldSecurityToken] != "tok" || ext[FieldSignature] == "" {
		t.Fatalf("sign: %v", ext)
	}
	if !Verify(ext, []byte("b"), "sk12345") {
		t.Fatal("own signature refused")
	}
	ext["queueId"] = "2"
	if Verify(ext, []byte("b"), "sk12345") {
		t.Fatal("changed field accepted")
	}
	// The Go client's _UNIQUE_KEY_QUERY signed or not: both accepted.
	ext = Sign(map[string]string{"topic": "T", FieldUniqueKeyQuery: "true"}, nil, "ak12345", "sk12345", "")
	if !Verify(ext, nil, "sk12345") {
		t.Fatal("signed _UNIQUE_KEY_QUERY refused")
	}
	ext = Sign(map[string]string{"topic": "T"}, nil, "ak12345", "sk12345", "")
	ext[FieldUniqueKeyQuery] = "true"
	if !Verify(ext, nil, "sk12345") {
		t.Fatal("unsigned _UNIQUE_KEY_QUERY (Java client) refused")
	}
	for _, bad := range []string{"", "not base64!", "QUJD"} {
		ext[FieldSignature] = bad
		if Verify(ext, nil, "sk12345") {
			t.Fatalf("signature %q accepted", bad)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("topic", "T", "b", []byte("body"), "sk12345")
	f.Add("\uff01", "\U0001F600", "", []byte{}, "x")
	f.Fuzz(func(t *testing.T, k1, v1, v2 string, body []byte, secret string) {
		ext := map[string]string{k1: v1, "k2": v2}
		signed := Sign(maps.Clone(ext), body, "ak12345", secret, "")
		if !Verify(signed, body, secret) {
			t.Fatalf("own signature refused: %v", signed)
		}
		ext[FieldSignature] = v2
		_ = Verify(ext, body, secret) // never panics
		if _, err := ParseAddressPattern(v1); err == nil {
			_ = err
		}
		_, _ = ParsePerm(v2)
		_, _ = Parse([]byte(v1))
		for _, code := range []int32{protocol.HeartBeat, protocol.LockBatchMQ, protocol.PullMessage, protocol.SendMessageV2} {
			_, _ = Resources(code, ext, body)
		}
	})
}
