package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
)

const cliACLFile = `accounts:
  - accessKey: adminKey1
    secretKey: adminSecret1
    admin: true
  - accessKey: userKey01
    secretKey: userSecret1
    topicPerms:
      - cli-acl=PUB|SUB
    groupPerms:
      - cli-g=SUB
`

// TestClientCommandsACL: with ACL on, the CLI signs with --access-key and
// --secret-key or SAMSA_ACCESS_KEY/SAMSA_SECRET_KEY; without them, or with
// a non-admin account for an admin command, it fails with NO_PERMISSION.
func TestClientCommandsACL(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(file, []byte(cliACLFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := broker.Config{}
	cfg.ACLEnable, cfg.ACLFile, cfg.AccessKey, cfg.SecretKey = true, file, "adminKey1", "adminSecret1"
	dev, err := devcluster.Start(devcluster.Options{Dir: filepath.Join(dir, "store"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Broker: cfg, NamesrvACLFile: file})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ns := "--namesrv=" + dev.NamesrvAddr()
	run := func(in string, f func([]string) error, args ...string) (string, error) {
		t.Helper()
		return stdio(t, in, func() error { return f(append(args, ns)) })
	}
	must := func(out string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	if _, err := run("", runTopic, "create", "cli-acl", "--queues", "1"); err == nil || !strings.Contains(err.Error(), "NO_PERMISSION") && !strings.Contains(err.Error(), "access denied") {
		t.Fatalf("unsigned topic create: %v", err)
	}
	if _, err := run("", runTopic, "create", "cli-acl", "--queues", "1", "--access-key", "userKey01", "--secret-key", "userSecret1"); err == nil {
		t.Fatal("topic create by a non-admin account succeeded")
	}
	must(run("", runTopic, "create", "cli-acl", "--queues", "1", "--access-key", "adminKey1", "--secret-key", "adminSecret1"))

	t.Setenv("SAMSA_ACCESS_KEY", "userKey01")
	t.Setenv("SAMSA_SECRET_KEY", "userSecret1")
	must(run("alpha\nbeta\n", runProduce, "--topic", "cli-acl"))
	out := must(run("", runConsume, "--topic", "cli-acl", "--group", "cli-g", "--from", "earliest", "--count", "2"))
	if !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") {
		t.Fatalf("consume: %q", out)
	}
	// A group the account may not use: the consumer's heartbeats and
	// pulls are refused; it gets nothing and stops when idle.
	if out, _ := run("", runConsume, "--topic", "cli-acl", "--group", "other-g", "--from", "earliest", "--idle", "2s"); strings.Contains(out, "alpha") {
		t.Fatalf("consume with a group the account may not use: %q", out)
	}
	// stats wants an admin account on the text port.
	if _, err := run("", runStats, "--broker", dev.BrokerAddr()); err == nil {
		t.Fatal("stats as a non-admin account succeeded")
	}
	out = must(run("", runStats, "--broker", dev.BrokerAddr(), "--access-key", "adminKey1", "--secret-key", "adminSecret1"))
	if !strings.Contains(out, "acl_denied:no_permission:HEART_BEAT") {
		t.Fatalf("stats: %q", out)
	}
	t.Setenv("SAMSA_SECRET_KEY", "wrong-secret")
	if _, err := run("gamma\n", runProduce, "--topic", "cli-acl", "--timeout", "3s"); err == nil {
		t.Fatal("produce with a wrong secret key succeeded")
	}
}
