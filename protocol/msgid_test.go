package protocol

import (
	"errors"
	"net/netip"
	"testing"
)

func TestOffsetMsgID(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	id := OffsetMsgID(host, 1000)
	// 0A000001 | 00002A9F | 00000000000003E8
	if id != "0A00000100002A9F00000000000003E8" {
		t.Fatalf("id %s", id)
	}
	h, off, err := ParseOffsetMsgID(id)
	if err != nil || h != host || off != 1000 {
		t.Fatalf("%v %d %v", h, off, err)
	}
	v6 := netip.MustParseAddrPort("[2001:db8::1]:10911")
	id6 := OffsetMsgID(v6, 1<<40)
	if len(id6) != 56 {
		t.Fatalf("v6 id %s", id6)
	}
	if h, off, err := ParseOffsetMsgID(id6); err != nil || h != v6 || off != 1<<40 {
		t.Fatalf("%v %d %v", h, off, err)
	}
	if mapped := OffsetMsgID(netip.MustParseAddrPort("[::ffff:10.0.0.1]:10911"), 1000); mapped != id {
		t.Fatalf("v4-mapped %s", mapped)
	}
	for _, bad := range []string{"", "0A", "ZZ00000100002A9F00000000000003E8", "0A000001FFFFFFFF00000000000003E8"} {
		if _, _, err := ParseOffsetMsgID(bad); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
