package broker

import (
	"strings"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// TestXABadInput: malformed XA requests are refused with XAER_INVAL and a
// reason, a verb out of order with XAER_PROTO, an unknown branch with
// XAER_NOTA; a code of the XA range that is not a verb is not supported.
func TestXABadInput(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	xid := map[string]string{"formatId": "1", "gtrid": "6731", "bqual": ""}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		code   int32
		ext    map[string]string
		body   string
		xaCode string
		remark string
	}{
		{"no XID", protocol.XAStart, map[string]string{}, "", "-5", "formatId"},
		{"gtrid not hex", protocol.XAStart, with(xid, "gtrid", "zz"), "", "-5", "gtrid: want hex"},
		{"empty gtrid", protocol.XAStart, with(xid, "gtrid", ""), "", "-5", "global transaction id of 0 bytes"},
		{"gtrid too long", protocol.XAStart, with(xid, "gtrid", strings.Repeat("ab", 65)), "", "-5", "want 1 to 64"},
		{"bad start flags", protocol.XAStart, with(xid, "flags", "7"), "", "-5", "start flags"},
		{"prepare unknown", protocol.XAPrepare, xid, "", "-4", "no branch"},
		{"start", protocol.XAStart, xid, "", "0", ""},
		{"start twice", protocol.XAStart, xid, "", "-8", "exists"},
		{"prepare before end", protocol.XAPrepare, xid, "", "-6", "before its end"},
		{"end with a bad body", protocol.XAEnd, with(xid, "flags", "67108864"), "not a ref", "-5", "bad half message reference"},
		{"end naming no half", protocol.XAEnd, with(xid, "flags", "67108864"), "0:0", "-5", "half 0 at 0"},
		{"end", protocol.XAEnd, with(xid, "flags", "67108864"), "", "0", ""},
		{"prepare an empty branch", protocol.XAPrepare, xid, "", "3", ""},
		{"commit after read-only", protocol.XACommit, xid, "", "-4", "no branch"},
	} {
		req := protocol.NewRequest(tc.code, tc.ext, []byte(tc.body))
		resp := c.call(req)
		if got := resp.ExtFields["xaCode"]; got != tc.xaCode || !strings.Contains(resp.Remark, tc.remark) {
			t.Errorf("%s: xaCode %s remark %q, want %s with %q", tc.name, got, resp.Remark, tc.xaCode, tc.remark)
		}
		if ok := resp.Code == protocol.Success; ok != (tc.xaCode == "0" || tc.xaCode == "3") {
			t.Errorf("%s: response code %d with xaCode %s", tc.name, resp.Code, tc.xaCode)
		}
	}
	resp := c.call(protocol.NewRequest(9210, xid, nil))
	if resp.Code != protocol.RequestCodeNotSupported {
		t.Errorf("an XA-range code that is no verb: %d %q", resp.Code, resp.Remark)
	}
}
