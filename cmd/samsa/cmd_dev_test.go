package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
)

// TestDevGroups is `samsa dev --groups 3` as a new user runs it: three
// broker groups in one cluster, each printed with its address; `samsa
// topic create` then puts the topic on every group's master.
func TestDevGroups(t *testing.T) {
	for _, bad := range []string{"0", "27"} {
		if _, err := startDev([]string{"--groups", bad, "--namesrv", "127.0.0.1:0", "--port", "0"}, &bytes.Buffer{}); err == nil ||
			!strings.Contains(err.Error(), "--groups") {
			t.Fatalf("--groups %s: %v", bad, err)
		}
	}
	var out bytes.Buffer
	s, err := startDev([]string{"--groups", "3", "--namesrv", "127.0.0.1:0", "--port", "0", "--dir", t.TempDir(),
		"--log-level", "error", "-D", "mappedFileSizeCommitLog=8388608", "--proxy", "127.0.0.1:0"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, s.close) })
	printed := out.String()
	if len(s.dev.Groups) != 3 {
		t.Fatalf("%d groups:\n%s", len(s.dev.Groups), printed)
	}
	for _, g := range s.dev.Groups {
		if !strings.Contains(printed, "broker "+g.BrokerAddr()+" ("+g.Name+")") {
			t.Fatalf("%s at %s not printed:\n%s", g.Name, g.BrokerAddr(), printed)
		}
	}
	if s.proxy == nil || !strings.Contains(printed, "gRPC proxy "+s.proxy.Addr()) {
		t.Fatalf("no gRPC proxy printed:\n%s", printed)
	}
	if !strings.Contains(printed, "name server "+s.dev.NamesrvAddr()) || !strings.Contains(printed, "3 broker groups in cluster") {
		t.Fatalf("printed:\n%s", printed)
	}

	ns := "--namesrv=" + s.dev.NamesrvAddr()
	mustCLI(t, ns, "", runTopic, "create", "dev-groups", "--queues", "2")
	a, err := client.NewAdmin(client.ClientOptions{NameServers: []string{s.dev.NamesrvAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := a.Route(ctx, "dev-groups")
	if err != nil {
		t.Fatal(err)
	}
	var routed []string
	for _, q := range r.QueueDatas {
		routed = append(routed, q.BrokerName)
	}
	slices.Sort(routed)
	if !slices.Equal(routed, []string{"broker-a", "broker-b", "broker-c"}) {
		t.Fatalf("the topic is routed to %v, want every group", routed)
	}
}
