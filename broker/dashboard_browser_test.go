package broker

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// chromium returns the path of a Chromium on PATH, "" when there is none.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDashboardInBrowser loads the dashboard in a real headless Chromium against
// an in-process name server and broker, lets the page run for a virtual
// 12 s (its polls included: virtual time waits for the network), and
// checks the rendered DOM: the cluster table names the broker, the topic
// table the topic, the live charts have drawn, and no request failed.
// The browser reaches nothing but loopback (--host-resolver-rules) and is
// killed after 2 min at most. Skipped where no Chromium is installed
// (Debian: apt-get install chromium), unless SAMSA_BROWSER_TEST=require
// (for CI, where a skip would hide that the page went untested).
func TestDashboardInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" && os.Getenv("SAMSA_BROWSER_TEST") == "require" {
		t.Fatal("SAMSA_BROWSER_TEST=require and no chromium or chromium-browser on PATH (apt-get install chromium)")
	}
	if bin == "" {
		t.Skip("no chromium or chromium-browser on PATH: the dashboard's browser test needs Debian's Chromium (apt-get install chromium)")
	}
	dir := t.TempDir()
	dev, err := startCluster(clusterOptions{Dir: filepath.Join(dir, "store"), Logger: quietLogger(),
		Broker: Config{MappedFileSizeCommitLog: 4 << 20, AdminListen: "127.0.0.1:0", BrokerName: "browser-broker", DashboardAdmin: clientAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	b := dev.Broker
	uiFixture(t, b, func(c *protocol.Command) *protocol.Command { return c })

	base := "http://" + b.AdminAddr() + "/ui/"
	expect(t, dumpDOM(t, bin, dir, base), []struct{ what, re string }{
		{"the broker in the cluster table", `<table id="cluster-table">.*<td>browser-broker \(this\)</td><td class="num">0</td><td>master</td><td>ASYNC_MASTER</td>`},
		{"the cluster from the name server", `<small id="cluster-source">from name server 127\.0\.0\.1:\d+</small>`},
		{"the topic in the topic table", `<table id="topics-table">.*<td>ui-t</td><td>2 / 2</td>`},
		{"the broker's name in the title bar", `<span id="broker-title">browser-broker \(`},
		{"a drawn chart", `<svg id="chart-in"[^>]*>.*<polyline points="[^"]+"`},
		{"no failed request", `<span id="status"></span>`},
	})
	// Deep links open a topic, a group, a message search.
	expect(t, dumpDOM(t, bin, dir, base+"#topics?topic=ui-t"), []struct{ what, re string }{
		{"the topic's queues", `<span id="topic-name">ui-t</span>.*<table id="topic-queues">.*<td class="num">1</td><td class="num">0</td><td class="num">3</td>`},
		{"the topic's group", `<span id="topic-groups"><a href="#groups\?group=ui-g">ui-g</a>`},
	})
	expect(t, dumpDOM(t, bin, dir, base+"#groups?group=ui-g"), []struct{ what, re string }{
		{"the group's lag", `<span id="group-name">ui-g</span>.*<span id="group-lag">2</span>`},
		{"queue 1's progress", `<td>ui-t</td><td class="num">1</td><td class="num">0</td><td class="num">3</td><td class="num">1</td><td class="num">2</td>`},
		{"the reset form's topic", `<select id="reset-topic"><option value="ui-t">ui-t</option></select>`},
	})
	expect(t, dumpDOM(t, bin, dir, base+"#messages?topic=ui-t&key=k1"), []struct{ what, re string }{
		{"the message found by key", `<div id="msg-results"><div class="msg"><h4>ui-t queue 1 offset 1</h4>.*<pre>hello 1</pre>`},
		{"no search error", `<p id="msg-error" class="error"></p>`},
	})
	expect(t, dumpDOM(t, bin, dir, base+"#messages?topic=ui-t&queue=1&offset=0&n=3"), []struct{ what, re string }{
		{"three messages from the offset", `<pre>hello 0</pre>.*<pre>hello 1</pre>.*<pre>hello 2</pre>`},
	})
}

// dumpDOM runs the headless browser on url for a virtual 12 s and returns
// the DOM it rendered. The browser reaches nothing but loopback and is
// killed after 2 min at most.
func dumpDOM(t *testing.T, bin, dir, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
		"--disable-background-networking", "--disable-component-update", "--disable-default-apps",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--user-data-dir="+filepath.Join(dir, "chromium"),
		"--virtual-time-budget=12000", "--dump-dom", url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium on %s: %v\nstderr: %s", url, err, tail(stderr.String(), 2000))
	}
	return stdout.String()
}

// expect checks the DOM against each pattern, and shows it on a failure.
func expect(t *testing.T, dom string, checks []struct{ what, re string }) {
	t.Helper()
	failed := false
	for _, c := range checks {
		if !regexp.MustCompile("(?s)" + c.re).MatchString(dom) {
			t.Errorf("the rendered page lacks %s (/%s/)", c.what, c.re)
			failed = true
		}
	}
	if failed {
		t.Logf("DOM:\n%s", tail(dom, 8000))
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
