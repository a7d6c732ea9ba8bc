package client

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/samsamq/samsa/namesrv"
)

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestAdminClusterInfoFrom: the answer says which name server gave it,
// past one that is down; with every name server down, the error names
// each of them.
func TestAdminClusterInfoFrom(t *testing.T) {
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	dead1, dead2 := deadAddr(t), deadAddr(t)

	a, err := NewAdmin(ClientOptions{NameServers: []string{dead1, ns.Addr()}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ci, from, err := a.ClusterInfoFrom(context.Background())
	if err != nil || ci == nil || from != ns.Addr() {
		t.Fatalf("ClusterInfoFrom: %+v from %q, %v; want an answer from %s", ci, from, err, ns.Addr())
	}
	if ci, err := a.ClusterInfo(context.Background()); err != nil || ci == nil {
		t.Fatalf("ClusterInfo: %+v, %v", ci, err)
	}

	down, err := NewAdmin(ClientOptions{NameServers: []string{dead1, dead2}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	_, from, err = down.ClusterInfoFrom(context.Background())
	if err == nil || from != "" {
		t.Fatalf("with every name server down: from %q, %v", from, err)
	}
	for _, want := range []string{"name server " + dead1, "name server " + dead2} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
