package nodejs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/acl"
	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/proxy"
)

func logger() *slog.Logger {
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// install runs npm ci once per package-lock.json into the user's cache
// directory and returns its node_modules; it skips t when node or npm is
// missing or npm ci fails (no registry reachable).
func install(t *testing.T) string {
	t.Helper()
	// CI (.ci/run) installs node and npm and sets SAMSA_NODE_TEST=require:
	// then a missing tool fails the test (npm ci without a reachable
	// registry still skips).
	skip := t.Skipf
	if os.Getenv("SAMSA_NODE_TEST") == "require" {
		skip = t.Fatalf
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip("%s not found: the official Node.js client's scenarios need node and npm (Debian: apt-get install nodejs npm)", tool)
		}
	}
	lock, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "samsa", "compat-nodejs", hex.EncodeToString(sum[:8]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "rocketmq-client-nodejs", "package.json")); err == nil {
		return modules
	}
	// Install into a fresh directory, then rename it into place: two
	// test processes never see a half-installed tree.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for name, data := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("npm ci failed (no npm registry reachable?): the official Node.js client's scenarios are skipped: %v\n%s", err, tail(out))
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(modules, "rocketmq-client-nodejs", "package.json")); serr != nil {
			t.Fatal(err)
		} // else another process installed it meanwhile
	}
	return modules
}

// aclFile is the accounts file of the ACL scenario's proxy.
const aclFile = `
accounts:
  - accessKey: nodeAK0001
    secretKey: nodeSK0001
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// TestOfficialNodeClient runs every scenario of scenarios.js with
// RocketMQ 5's Node.js client against a cluster behind the gRPC proxy.
func TestOfficialNodeClient(t *testing.T) {
	modules := install(t)
	cfg := broker.Config{Logger: logger(), MappedFileSizeCommitLog: 64 << 20,
		TransactionTimeout: time.Second, TransactionCheckInterval: 500 * time.Millisecond}
	c, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Broker: cfg, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// Polls of 2 s: a message a push consumer nacks comes back within one
	// (a held POP does not wake when an in-flight message falls due), so
	// its 17 deliveries before the DLQ (a group's default 16 retries, as
	// the proxy's default MaxDeliveryAttempts says) take well under the
	// scenario's deadline.
	p, err := proxy.New(proxy.Options{NameServers: []string{c.NamesrvAddr()}, Listen: "127.0.0.1:0", Logger: logger(),
		LongPollMax: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfgACL, err := acl.Parse([]byte(aclFile))
	if err != nil {
		t.Fatal(err)
	}
	pACL, err := proxy.New(proxy.Options{NameServers: []string{c.NamesrvAddr()}, Listen: "127.0.0.1:0", Logger: logger(),
		ACL: acl.NewStatic(cfgACL)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pACL.Close() })
	admin, err := client.NewAdmin(client.ClientOptions{NameServers: []string{c.NamesrvAddr()}, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	topics := map[string][]string{
		"basic":       {"basic-" + run},
		"fifo":        {"fifo-" + run},
		"delay":       {"delay-" + run},
		"transaction": {"txn-" + run},
		"invisible":   {"invisible-" + run},
		"dlq":         {"dlq-" + run, "%DLQ%g-dlq-" + run},
		"acl":         {"acl-" + run},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ts := range topics {
		for _, topic := range ts {
			if err := admin.CreateTopic(ctx, topic, client.TopicOptions{Queues: 4}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, sc := range []string{"basic", "fifo", "delay", "transaction", "invisible", "dlq", "acl"} {
		t.Run(sc, func(t *testing.T) {
			endpoints := p.Addr()
			if sc == "acl" {
				endpoints = pACL.Addr()
			}
			res := runScenario(t, modules, endpoints, sc, run)
			t.Logf("%s: %s", sc, res)
		})
	}
}

// runScenario runs one scenario and returns its RESULT line's JSON.
func runScenario(t *testing.T, modules, endpoints, scenario, run string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "scenarios.js", endpoints, scenario, run)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		t.Logf("%s: node's output:\n%s\n%s", scenario, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if rest, found := strings.CutPrefix(line, "RESULT "); found && err == nil {
			var v map[string]any
			if jerr := json.Unmarshal([]byte(rest), &v); jerr != nil {
				t.Fatalf("%s: result %q: %v", scenario, rest, jerr)
			}
			return rest
		}
		if strings.HasPrefix(line, "FAIL ") {
			t.Fatalf("%s failed: %s\nstderr:\n%s", scenario, line, tail(stderr.Bytes()))
		}
	}
	t.Fatalf("%s: no result (%v)\nstdout:\n%s\nstderr:\n%s", scenario, err, tail(out), tail(stderr.Bytes()))
	return ""
}
