package namesrv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/protocol"
)

// TestACLBrokerNameBinding: a broker name belongs to the account that
// registered it while it is registered; once unregistered, another admin
// account may take it.
func TestACLBrokerNameBinding(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	err := os.WriteFile(file, []byte(`accounts:
  - {accessKey: adminKeyA, secretKey: secretKeyA, admin: true}
  - {accessKey: adminKeyB, secretKey: secretKeyB, admin: true}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Options{ACLEnable: true, ACLFile: file})
	c := dial(t, srv.Addr())
	signedCall := func(code int32, ext map[string]string, body []byte, ak, sk string) *protocol.Command {
		t.Helper()
		return c.mustRoundTrip(code, acl.Sign(ext, body, ak, sk, ""), body)
	}
	register := func(ak, sk string) *protocol.Command {
		r := registration("c1", "a", 0, "a:1", 1, topicConfig("T", 4))
		body, err := protocol.MarshalBody(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.BodyCrc32 = protocol.BodyCRC32(body)
		return signedCall(protocol.RegisterBroker, r.Header.Encode(), body, ak, sk)
	}
	unregister := func(ak, sk string) *protocol.Command {
		uh := protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "a", BrokerID: 0, BrokerAddr: "a:1"}
		return signedCall(protocol.UnregisterBroker, uh.Encode(), nil, ak, sk)
	}
	if r := register("adminKeyA", "secretKeyA"); r.Code != protocol.Success {
		t.Fatalf("register as A: %s", r)
	}
	if r := register("adminKeyB", "secretKeyB"); r.Code != protocol.NoPermission || !strings.Contains(r.Remark, "another account") {
		t.Fatalf("register as B: %s", r)
	}
	if r := unregister("adminKeyB", "secretKeyB"); r.Code != protocol.NoPermission {
		t.Fatalf("unregister as B: %s", r)
	}
	if r := unregister("adminKeyA", "secretKeyA"); r.Code != protocol.Success {
		t.Fatalf("unregister as A: %s", r)
	}
	if r := register("adminKeyB", "secretKeyB"); r.Code != protocol.Success {
		t.Fatalf("register as B once A is gone: %s", r)
	}
	if r := register("adminKeyA", "secretKeyA"); r.Code != protocol.NoPermission {
		t.Fatalf("register as A, now B's: %s", r)
	}
	if r := c.mustRoundTrip(protocol.GetAllTopicListFromNameServer, nil, nil); r.Code != protocol.NoPermission {
		t.Fatalf("unsigned query: %s", r)
	}
	n := int64(0)
	for _, d := range srv.ACLDenied() {
		n += d.N
	}
	if n != 4 {
		t.Fatalf("refusals %+v, want 4", srv.ACLDenied())
	}
}
