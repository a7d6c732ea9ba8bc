package ha

import (
	"strings"
	"testing"
	"time"
)

func TestHandshakeAuth(t *testing.T) {
	now := time.Now()
	hs := handshake{BrokerID: 1, Addr: "127.0.0.1:10911", SegmentSize: 1 << 20, MaxBody: 4 << 20,
		AccessKey: "adminKey1", SecretKey: "adminSecret1", TimeMs: now.UnixMilli()}
	frame := appendHandshake(nil, hs)
	got, err := decodeHandshake(frame[envelopeSize:])
	if err != nil {
		t.Fatal(err)
	}
	if got.AccessKey != hs.AccessKey || got.TimeMs != hs.TimeMs || got.Addr != hs.Addr || len(got.MAC) != macSize {
		t.Fatalf("decoded %+v", got)
	}
	secrets := map[string]string{"adminKey1": "adminSecret1"}
	m := &Master{cfg: MasterConfig{AdminSecret: func(ak string) (string, bool) { s, ok := secrets[ak]; return s, ok }}}
	if r := m.authRefusal(got, now); r != "" {
		t.Fatalf("refused a good handshake: %s", r)
	}
	cases := map[string]handshake{
		"must authenticate":      {BrokerID: 1, SegmentSize: 1 << 20},
		"not an admin account":   {BrokerID: 1, SegmentSize: 1 << 20, AccessKey: "userKey01", SecretKey: "x", TimeMs: now.UnixMilli()},
		"signature check failed": {BrokerID: 1, SegmentSize: 1 << 20, AccessKey: "adminKey1", SecretKey: "wrong", TimeMs: now.UnixMilli()},
		"off the master's clock": {BrokerID: 1, SegmentSize: 1 << 20, AccessKey: "adminKey1", SecretKey: "adminSecret1", TimeMs: now.Add(-time.Hour).UnixMilli()},
	}
	for want, h := range cases {
		d, err := decodeHandshake(appendHandshake(nil, h)[envelopeSize:])
		if err != nil {
			t.Fatal(err)
		}
		if r := m.authRefusal(d, now); !strings.Contains(r, want) {
			t.Errorf("%s: refusal %q", want, r)
		}
	}
	// A tampered field fails the signature.
	frame[envelopeSize+9] ^= 1 // the broker id
	d, err := decodeHandshake(frame[envelopeSize:])
	if err != nil {
		t.Fatal(err)
	}
	if r := m.authRefusal(d, now); !strings.Contains(r, "signature check failed") {
		t.Fatalf("tampered handshake: %q", r)
	}
	// Without AdminSecret nothing is asked.
	if r := (&Master{}).authRefusal(handshake{}, now); r != "" {
		t.Fatal(r)
	}
	// Cut short: a protocol error, not a panic.
	for n := handshakeFixed; n < len(frame)-envelopeSize; n++ {
		if _, err := decodeHandshake(frame[envelopeSize : envelopeSize+n]); err == nil && n != handshakeFixed+len(hs.Addr) {
			t.Fatalf("decoded a handshake cut to %d bytes", n)
		}
	}
}
